"""The mirror directory's layout, its --mirror-dir settings, the manifest and the dry-run estimate."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from srcbuild.errors import UsageError
from srcbuild.mirror.gather import Download, Needs, Repo, estimate, needs_of
from srcbuild.mirror.gitrepos import resolve_relative
from srcbuild.mirror.layout import base_of, git_path, mirror_dir_settings, nvidia_path
from srcbuild.mirror.manifest import Entry, Manifest, parse_manifest, read_manifest, verify
from srcbuild.offline import missing_requirement
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.sources.mirrors import parse_mirror_args
from srcbuild.toolchain.data_files import load_facts
from srcbuild.toolchain.download import NVIDIA_HOSTS


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://github.com/pytorch/pytorch", "git/github.com/pytorch/pytorch"),
        ("https://github.com/pybind/pybind11.git", "git/github.com/pybind/pybind11.git"),
        ("git@github.com:google/flatbuffers.git", "git/github.com/google/flatbuffers.git"),
        ("ssh://git@gitee.com/mirrors/nccl", "git/gitee.com/mirrors/nccl"),
        ("https://github.com/a/../../etc", None),
        ("/srv/repos/pytorch", None),
        ("ext::sh -c evil", None),
    ],
)
def test_each_url_has_one_place_under_git(url: str, path: str | None) -> None:
    assert git_path(url) == path


def test_nvidia_downloads_keep_the_site_paths() -> None:
    url = "https://developer.download.nvidia.com/compute/cuda/9.2/Prod2/local_installers/cuda_9.2.148_396.37_linux"
    assert nvidia_path(url, NVIDIA_HOSTS) == "nvidia/compute/cuda/9.2/Prod2/local_installers/cuda_9.2.148_396.37_linux"
    assert nvidia_path("https://example.org/x.tgz", NVIDIA_HOSTS) is None


def test_relative_submodule_urls_resolve_against_the_superproject() -> None:
    assert resolve_relative("https://github.com/pytorch/pytorch", "../fbgemm") == "https://github.com/pytorch/fbgemm"
    assert (
        resolve_relative("git@github.com:pytorch/pytorch.git", "../cpuinfo.git") == "git@github.com:pytorch/cpuinfo.git"
    )
    assert resolve_relative("https://github.com/a/b", "https://x.org/c") == "https://x.org/c"


def test_mirror_dir_rules_send_every_spelling_to_the_directory(tmp_path: Path) -> None:
    settings = mirror_dir_settings(str(tmp_path / "m"), ["github.com"])
    base = f"{tmp_path}/m/"
    assert settings["SRCBUILD_MIRROR_DIR"] == base
    assert settings["SRCBUILD_NVIDIA_MIRROR"] == f"file://{tmp_path}/m/nvidia/"
    rules = parse_mirror_args([settings["SRCBUILD_MIRROR"]], {})
    for url, want in (
        ("https://github.com/pytorch/pytorch", "git/github.com/pytorch/pytorch"),
        ("git@github.com:google/flatbuffers.git", "git/github.com/google/flatbuffers.git"),
        ("git://github.com/x/y", "git/github.com/x/y"),
    ):
        assert rules.rewrite(url) == base + want


def test_an_http_mirror_keeps_its_url() -> None:
    settings = mirror_dir_settings("http://mirror.lab:8000/srcbuild", [])
    assert base_of("http://mirror.lab:8000/srcbuild") == "http://mirror.lab:8000/srcbuild/"
    assert settings["SRCBUILD_NVIDIA_MIRROR"] == "http://mirror.lab:8000/srcbuild/nvidia/"
    rules = parse_mirror_args([settings["SRCBUILD_MIRROR"]], {})
    assert (
        rules.rewrite("https://github.com/pytorch/vision")
        == "http://mirror.lab:8000/srcbuild/git/github.com/pytorch/vision"
    )


def test_the_manifest_round_trips_and_verify_names_each_difference(tmp_path: Path) -> None:
    (tmp_path / "nvidia").mkdir()
    (tmp_path / "nvidia" / "a.run").write_bytes(b"abc")
    (tmp_path / "nvidia" / "b.run").write_bytes(b"abc")
    digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    manifest = Manifest(
        made_for={"r": ["torch"]},
        providers=["debian", "pypi"],
        files={
            "nvidia/a.run": Entry(digest, 3, "https://x/a.run"),
            "nvidia/b.run": Entry("0" * 64, 3, "https://x/b.run"),
            "nvidia/c.run": Entry(digest, 3, "https://x/c.run"),
        },
    )
    manifest.write(tmp_path)
    again = read_manifest(str(tmp_path) + "/")
    assert again is not None and again.to_json() == manifest.to_json() and again.serves("r", "torch")
    assert again.providers == ["debian", "pypi"]
    older = json.dumps({"format": 1, "made_for": {}, "git_hosts": [], "files": {}})  # before providers were kept
    assert parse_manifest(older, "m/manifest.json").providers == []
    assert [(p.path, p.why) for p in verify(tmp_path, again)] == [
        ("nvidia/b.run", "sha256 ba7816bf8f01..., manifest 000000000000..."),
        ("nvidia/c.run", "missing"),
    ]


@pytest.mark.parametrize("text", ["[]", '{"format": 2}', '{"format": 1, "files": {"../x": {}}}', "{"])
def test_a_bad_manifest_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="not a srcbuild mirror manifest"):
        parse_manifest(text, "m/manifest.json")


def test_the_estimate_counts_what_the_data_knows() -> None:
    needs = Needs(
        repos=(
            Repo("https://github.com/pytorch/pytorch", "v1.7.1", None, "torch"),
            Repo("https://x.org/r", "v1", None, "x"),
        ),
        downloads=(Download("https://developer.download.nvidia.com/a", "0" * 64, 100, "CUDA"),),
        patches=(),
        not_mirrored=(),
    )
    est = estimate(needs)
    assert (est.downloads, est.repos, est.unknown) == (100, 4060000000, ("https://x.org/r (x)",))


def test_a_catalog_recipe_needs_its_sources_and_nvidia_downloads() -> None:
    recipe = RecipeCatalog(Paths.resolve(environ={})).load("kepler-k80-cu118")
    needs = needs_of(recipe, ("torch", "torchvision"), load_facts({}))
    assert [(r.url, r.tag) for r in needs.repos] == [
        ("https://github.com/pytorch/pytorch", "v2.5.1"),
        ("https://github.com/pytorch/vision", "v0.20.1"),
    ]
    assert needs.downloads and all(nvidia_path(d.url, NVIDIA_HOSTS) for d in needs.downloads)
    assert [(c.channel, c.why) for c in needs.conda] == [("conda-forge", "gcc 11 (conda)")]
    assert "gcc_linux-64 11.*" in needs.conda[0].specs
    assert [f.requirement for f in needs.index] == ["nvidia-cudnn-cu11==8.5.0.96"]  # the pypi provider's cuDNN
    assert not needs.not_mirrored
    assert json.dumps([d.url for d in needs.downloads])  # plain data


def test_skipped_pieces_are_named_and_the_debian_route_brings_its_packages_and_wheels() -> None:
    recipe = RecipeCatalog(Paths.resolve(environ={})).load("kepler-k80-cu118")
    facts = load_facts({})
    needs = needs_of(recipe, ("torch",), facts, prefer=("debian",), skip=("gcc",))
    assert needs.not_mirrored == ("gcc 11: left out (--skip gcc)",)
    assert needs.providers == (("cuda", "debian"), ("cudnn", "pypi"))
    route = facts.debian_for("11.8")
    assert route is not None and needs.debian == (route,) and not needs.downloads
    assert {f.requirement for f in needs.index} == {w.requirement for w in route.wheels} | {
        "nvidia-cudnn-cu11==8.5.0.96"
    }
    est = estimate(needs)
    wheels = sum(w.size or 0 for w in route.wheels)
    assert est.debian == (route.download_size or 0) - wheels and est.index == wheels + 557141533
    assert est.total == est.downloads + est.repos + est.index + est.debian


def test_mirror_dir_points_pip_at_the_mirror_index_alone(tmp_path: Path) -> None:
    settings = mirror_dir_settings(str(tmp_path / "m"), [])
    assert settings["PIP_INDEX_URL"] == f"file://{tmp_path}/m/pypi/simple/"
    assert (settings["PIP_EXTRA_INDEX_URL"], settings["PIP_FIND_LINKS"], settings["PIP_NO_INDEX"]) == ("", "", "0")
    assert settings["PIP_CONFIG_FILE"] == os.devnull
    assert settings["SRCBUILD_DEBIAN_MIRROR"] == f"file://{tmp_path}/m/debian"
    assert mirror_dir_settings("http://lab/m", [])["PIP_INDEX_URL"] == "http://lab/m/pypi/simple/"


def test_pip_names_the_requirement_it_lacks() -> None:
    tail = ["ERROR: Could not find a version that satisfies the requirement numpy<2 (from versions: none)",
            "ERROR: No matching distribution found for numpy<2"]
    assert missing_requirement(tail) == "numpy<2"
    assert missing_requirement(["ERROR: something else"]) is None
