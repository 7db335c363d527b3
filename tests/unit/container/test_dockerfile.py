"""The Dockerfile of `srcbuild plan --format dockerfile`, parsed: stages, bases from the data, no `latest`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.container import dockerfile_for
from srcbuild.container.images import DATA, choose_bases, custom_bases, images, load_data
from srcbuild.errors import UsageError
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog

CATALOG = [p.stem for p in sorted((Path(__file__).resolve().parents[3] / "recipes").glob("*.toml"))]


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Parsed:
    args: dict[str, str]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    def base_of(self, name: str) -> str:
        """The image a stage starts from, with global ARGs substituted."""
        base = self.stage(name).base
        return re.sub(r"\$\{(\w+)\}", lambda m: self.args[m.group(1)], base)


def parse(text: str) -> Parsed:
    """A small Dockerfile parser: comments dropped, continuation lines joined."""
    logical, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            logical.append(current.strip())
            current = ""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        assert keyword.isupper(), line
        if keyword == "FROM":
            base, _, name = rest.partition(" AS ")
            stages.append(Stage(base.strip(), name.strip()))
        elif keyword == "ARG" and not stages:
            key, _, value = rest.partition("=")
            args[key] = value
        else:
            stages[-1].instructions.append((keyword, rest))
    return Parsed(args, stages)


def recipe(name: str) -> Recipe:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load(name)


@pytest.mark.parametrize("name", CATALOG)
def test_every_catalog_recipe_has_three_stages_on_pinned_bases(name: str) -> None:
    parsed = parse(dockerfile_for(recipe(name), "torchvision"))
    assert [s.name for s in parsed.stages] == ["devel", "build", "runtime"]
    assert parsed.stage("build").base == "devel"
    tags = {row.devel for row in images()} | {row.runtime for row in images()}
    plain = load_data()["plain"]
    for stage in ("devel", "runtime"):
        image = parsed.base_of(stage)
        assert ":" in image and not image.endswith(":latest"), image
        assert image in tags or image in (plain["devel"], plain["runtime"].format(python=recipe(name).toolchain.python))
    runs = " ".join(rest for kw, rest in parsed.stage("build").instructions if kw == "RUN")
    assert f"srcbuild torch --recipe {name} --json" in runs
    assert f"srcbuild torchvision --recipe {name} --json" in runs
    assert "--mount=type=cache,id=srcbuild-wheels,target=/srcbuild/cache" in runs
    runtime = parsed.stage("runtime").instructions
    assert ("COPY", "--from=build /wheels /tmp/wheels") in runtime
    assert not any("srcbuild" in rest and "srcbuild-cuda" not in rest for kw, rest in runtime if kw == "RUN")


def test_a_package_built_against_torch_builds_torch_first_in_the_build_stage() -> None:
    runs = [rest for kw, rest in parse(dockerfile_for(recipe("kepler-cu92"), "torchaudio")).stage("build").instructions
            if kw == "RUN" and "srcbuild torch" in rest]
    assert ["srcbuild torch --recipe" in runs[0], "srcbuild torchaudio --recipe" in runs[1]] == [True, True]
    assert len(runs) == 2  # torch, then torchaudio: no torchvision


def test_kepler_cu102_uses_the_plain_image_because_the_cuda_tag_was_withdrawn() -> None:
    text = dockerfile_for(recipe("kepler-cu102"), "torch", ("gitee",))
    parsed = parse(text)
    assert parsed.base_of("devel") == "docker.io/library/python:3.11-slim-bookworm"
    assert parsed.base_of("runtime") == "docker.io/library/python:3.9-slim-bookworm"
    assert "#   docker.io/nvidia/cuda:10.2-cudnn7-devel-ubuntu18.04 was withdrawn by NVIDIA (2023-07; deleted:" in text
    devel = parsed.stage("devel").instructions
    assert ("RUN", '["srcbuild", "toolchain", "install", "--recipe", "kepler-cu102"]') in devel
    assert ("ARG", "SRCBUILD_NVIDIA_MIRROR=") in devel
    assert ("ARG", "SRCBUILD_MIRROR=gitee") in parsed.stage("build").instructions
    assert ("ENV", "LD_LIBRARY_PATH=/usr/local/lib/srcbuild-cuda") in parsed.stage("runtime").instructions


def test_kepler_k80_uses_the_official_cuda_118_images_with_an_eol_warning() -> None:
    bases = choose_bases(recipe("kepler-k80-cu118"))
    assert (bases.kind, bases.devel, bases.runtime) == (
        "nvidia",
        "docker.io/nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04",
        "docker.io/nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04",
    )
    assert bases.notes[0].startswith(
        "docker.io/nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04 is past end of life since 2025-05"
    )
    parsed = parse(dockerfile_for(recipe("kepler-k80-cu118"), "torch"))
    devel_runs = [rest for kw, rest in parsed.stage("devel").instructions if kw == "RUN"]
    assert (
        "apt-get install -y --no-install-recommends git ca-certificates python3.10 python3.10-venv gcc-11 g++-11"
        in (devel_runs[0])
    )
    assert not any("toolchain install" in run for run in devel_runs)


def test_pascal_cu126_uses_a_published_image() -> None:
    bases = choose_bases(recipe("pascal-cu126"))
    assert bases.devel == "docker.io/nvidia/cuda:12.6.3-cudnn-devel-ubuntu24.04"
    assert bases.runtime_python == "python3.12"


def test_a_recipe_file_outside_the_catalog_travels_in_the_context(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\ndescription = "x"\nextends = "kepler-k80-cu118"\n')
    text = dockerfile_for(RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(path)), "torch")
    parsed = parse(text)
    copy = ("COPY", '["recipes-extra/mine.toml", "/srcbuild/recipes/mine.toml"]')
    assert copy in parsed.stage("devel").instructions
    assert "srcbuild torch --recipe /srcbuild/recipes/mine.toml --json" in text


def test_custom_base_refuses_latest_and_untagged() -> None:
    with pytest.raises(UsageError, match="give an explicit tag or digest"):
        custom_bases("debian", recipe("kepler-cu102"))
    with pytest.raises(UsageError, match="`latest` moves under you"):
        custom_bases("localhost/base:latest", recipe("kepler-cu102"))
    assert custom_bases("localhost/base:12", recipe("kepler-cu102")).provision is False


def test_every_image_row_names_its_source() -> None:
    for row in images():
        assert row.source and row.status in ("published", "eol", "withdrawn"), row
        assert not row.devel.endswith(":latest")
    assert DATA.name == "cuda_images.toml"


def test_cli_prints_the_dockerfile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "torch", "--recipe", "kepler-cu92", "--format", "dockerfile"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# syntax=docker/dockerfile:1\n")
    assert [s.name for s in parse(out).stages] == ["devel", "build", "runtime"]
