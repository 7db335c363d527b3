"""``srcbuild plan PACKAGE --recipe R --format dockerfile``: a multi-stage Dockerfile.

Stages:

* ``devel``: the base from ``images.choose_bases`` (the official CUDA devel image, or the plain
  Python image plus ``srcbuild toolchain install --recipe R``), with srcbuild installed from the
  build context (a srcbuild checkout or sdist) into ``/opt/srcbuild``;
* ``build``: runs ``srcbuild torch`` (and ``srcbuild torchvision``, ``torchaudio``) with the work dir and the
  wheel cache on cache mounts, and copies the wheels to ``/wheels``;
* ``runtime``: the matching runtime image with only the wheels installed in ``/opt/venv`` (on the
  plain image, with the CUDA libraries the wheel links, copied from the provisioned toolkit).

Build arguments carry the mirrors (``SRCBUILD_MIRROR`` as ``--mirror``, ``SRCBUILD_NVIDIA_MIRROR``),
shared wheel caches (``SRCBUILD_REMOTES``) and the package index (``PIP_INDEX_URL``).
``srcbuild container build`` uses the same text (``DockerfileSpec``) and builds only ``devel``.

Every value that comes from a recipe or the command line stays data: shell words are quoted
(``shlex``), the recipe reaches ``srcbuild toolchain install`` through an exec-form ``RUN [...]``
(no shell), ``COPY`` takes the JSON form,
``ARG`` defaults are double-quoted when not plain (backslashes, double quotes and
dollar signs escaped), and comments lose their control characters (a newline would start an
instruction). A recipe file whose name a Dockerfile cannot carry as a plain word is refused.
"""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from collections.abc import Sequence

from srcbuild.container.images import Bases
from srcbuild.errors import UsageError
from srcbuild.packages import build_order
from srcbuild.recipe import Recipe
from srcbuild.records import record

SRCBUILD_VENV = "/opt/srcbuild"
WORK = "/srcbuild/work"
CACHE = "/srcbuild/cache"
TOOLCHAINS = "/srcbuild/toolchains"
RECIPES = "/srcbuild/recipes"
RUNTIME_LIBS = "/usr/local/lib/srcbuild-cuda"
CONTEXT_FILES = ("pyproject.toml", "README.md", "srcbuild", "recipes", "patches")
CACHE_IDS = ("srcbuild-work", "srcbuild-wheels")


@record
class DockerfileSpec:
    """What the Dockerfile builds: decided from the recipe, the bases and the plan's options."""

    recipe: Recipe
    package: str  # a package of srcbuild.packages (torch, torchvision, torchaudio)
    bases: Bases
    mirrors: tuple[str, ...] = ()
    recipe_file: str | None = None  # a recipe outside the catalog: its file name in the context


_PLAIN_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,200}")


def _comment_text(text: str) -> str:
    """``text`` safe inside a ``#`` comment: no control character (a newline would end the comment)."""
    return "".join("?" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)


def _one_line(value: str, what: str) -> str:
    """``value`` when it has no control character (a Dockerfile instruction is one line)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise UsageError(
            f"{what} {value!r} holds a control character; a Dockerfile cannot carry it",
            "write the value on one line, without control characters",
        )
    return value


def _words(argv: Sequence[str], what: str) -> str:
    """Shell words for a shell-form RUN: each quoted, none spanning a line."""
    return shlex.join(_one_line(a, what) for a in argv)


def _arg(name: str, value: str) -> str:
    """``ARG NAME=value``, double-quoted unless plain (Docker's word rules: backslash, quote, dollar escaped)."""
    _one_line(value, name)
    if re.fullmatch(r"[A-Za-z0-9._:/@+=,%-]*", value):
        return f"ARG {name}={value}"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'ARG {name}="{escaped}"'


def _exec(argv: Sequence[str]) -> str:
    """An exec-form instruction's JSON array: no shell reads it."""
    return json.dumps(list(argv), ensure_ascii=False)


def check_recipe_file(name: str) -> str:
    """``name`` when a Dockerfile can carry it as a plain word (COPY globs and shells never see more)."""
    if not _PLAIN_FILE_NAME.fullmatch(name):
        raise UsageError(
            f"recipe file name {name!r}: a Dockerfile carries only letters, digits and . _ + - in it",
            "rename the recipe file (for example to its recipe name plus .toml) and run the command again",
        )
    return name


def _run(*lines: str) -> list[str]:
    """One RUN instruction, a shell line per element, joined with ``&&``."""
    out = ["RUN " + lines[0]]
    out += [f"  && {line}" for line in lines[1:]]
    return [line + (" \\" if i < len(out) - 1 else "") for i, line in enumerate(out)]


def _apt(packages: Sequence[str]) -> list[str]:
    return _run(
        "apt-get update",
        f"apt-get install -y --no-install-recommends {_words(packages, 'package')}",
        "rm -rf /var/lib/apt/lists/*",
    )


def recipe_arg(spec: DockerfileSpec) -> str:
    return f"{RECIPES}/{check_recipe_file(spec.recipe_file)}" if spec.recipe_file else spec.recipe.name


def header(spec: DockerfileSpec) -> list[str]:
    recipe, bases = spec.recipe, spec.bases
    name = shlex.quote(recipe.name)
    image = shlex.quote(f"{spec.package}-{recipe.name}:{recipe.torch.tag}")
    lines = [
        "# syntax=docker/dockerfile:1",
        f"# {spec.package} for recipe {recipe.name}: `srcbuild plan {spec.package} --recipe {name} "
        "--format dockerfile`.",
        "# Build it from a srcbuild checkout (the context needs " + ", ".join(CONTEXT_FILES) + "):",
        f"#   docker build -f Dockerfile -t {image} .",
        "#   (podman build works the same; `--target devel` stops after the build image)",
        "# Build arguments:",
        "#   SRCBUILD_MIRROR         git mirrors, as --mirror takes them (gitee, PREFIX=REPLACEMENT)",
        "#   SRCBUILD_NVIDIA_MIRROR  base URL used instead of NVIDIA's download hosts",
        "#   SRCBUILD_REMOTES        shared wheel caches looked in first (directory, s3://, http://)",
        "#   PIP_INDEX_URL           the Python package index",
        f"# Cache mounts {CACHE_IDS[0]} and {CACHE_IDS[1]} keep the work dir and the wheel cache between builds.",
        f"# Base images ({bases.kind}):",
    ]
    for note in bases.notes:
        lines += [f"#   {text}" for text in textwrap.wrap(note, 96, subsequent_indent="  ")]
    if spec.recipe_file:
        lines.append(f"# The recipe file {spec.recipe_file} must be in the context under recipes-extra/.")
    return [_comment_text(line) for line in lines]


def devel_stage(spec: DockerfileSpec) -> list[str]:
    bases = spec.bases
    py = bases.srcbuild_python
    lines = [
        "FROM ${DEVEL_IMAGE} AS devel",
        "ARG SRCBUILD_NVIDIA_MIRROR=",
        "ARG PIP_INDEX_URL=",
        "ENV DEBIAN_FRONTEND=noninteractive",
    ]
    packages = ["git", "ca-certificates"]
    if bases.apt_python:  # an official CUDA image: its Ubuntu has the recipe's gcc as a package
        gcc = spec.recipe.toolchain.gcc.split(".")[0]
        packages += [py, f"{py}-venv", f"gcc-{gcc}", f"g++-{gcc}"]  # quoted by _apt
    if bases.kind != "custom":
        lines += _apt(packages)
    lines.append("COPY pyproject.toml README.md /opt/srcbuild-src/")
    lines += [f"COPY {name} /opt/srcbuild-src/{name}" for name in CONTEXT_FILES[2:]]
    if spec.recipe_file:
        name = check_recipe_file(spec.recipe_file)
        lines.append("COPY " + _exec([f"recipes-extra/{name}", f"{RECIPES}/{name}"]))
    venv = _words([py, "-m", "venv", SRCBUILD_VENV], "python")
    lines += _run(venv, f"{SRCBUILD_VENV}/bin/pip install --no-cache-dir /opt/srcbuild-src")
    env = {
        "PATH": f"{SRCBUILD_VENV}/bin:$PATH",
        "SRCBUILD_WORK_DIR": WORK,
        "SRCBUILD_CACHE_DIR": CACHE,
        "SRCBUILD_TOOLCHAIN_DIR": TOOLCHAINS,
    }
    lines.append("ENV " + " \\\n    ".join(f"{k}={v}" for k, v in env.items()))
    if bases.provision:
        lines.append("RUN " + _exec(["srcbuild", "toolchain", "install", "--recipe", recipe_arg(spec)]))
    return lines


def _build_one(package: str, spec: DockerfileSpec) -> list[str]:
    out = f"/tmp/{package}.json"
    wheel = f"{SRCBUILD_VENV}/bin/python -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"wheel\"])' {out}"
    mounts = [
        f"--mount=type=cache,id={CACHE_IDS[0]},target={WORK}",
        f"--mount=type=cache,id={CACHE_IDS[1]},target={CACHE}",
    ]
    argv = ["srcbuild", package, "--recipe", recipe_arg(spec)]
    lines = [f"RUN {' '.join(mounts)} \\", "    mkdir -p /wheels \\"]
    lines.append(f"  && {_words(argv, 'recipe')} --json > {out} \\")
    lines.append(f'  && cp "$({wheel})" /wheels/')
    return lines


def build_stage(spec: DockerfileSpec) -> list[str]:
    mirror = " ".join(spec.mirrors)
    lines = ["FROM devel AS build", _arg("SRCBUILD_MIRROR", mirror), "ARG SRCBUILD_REMOTES="]
    for package in build_order(spec.package):  # torch first, then the package built against it
        lines += _build_one(package, spec)
    if spec.bases.provision:  # the CUDA libraries the wheel links, from the provisioned toolkit
        lines += _run(
            "mkdir -p /runtime-libs /tmp/unpacked && cd /tmp/unpacked",
            f"{SRCBUILD_VENV}/bin/python -m zipfile -e /wheels/torch-*.whl .",
            f'export LD_LIBRARY_PATH="$(find {TOOLCHAINS} -type d \\( -name lib64 -o -name lib \\) | paste -sd:)"',
            f"find . -name '*.so*' -exec ldd {{}} + 2>/dev/null | awk '$3 ~ \"^{TOOLCHAINS}/\" {{print $3}}' "
            "| sort -u | xargs -r cp -L -t /runtime-libs",
        )
    return lines


def runtime_stage(spec: DockerfileSpec) -> list[str]:
    bases = spec.bases
    py = bases.runtime_python
    lines = ["FROM ${RUNTIME_IMAGE} AS runtime", "ARG PIP_INDEX_URL=", "ENV DEBIAN_FRONTEND=noninteractive"]
    if bases.apt_python:
        lines += _apt([py, f"{py}-venv"])
    lines.append("COPY --from=build /wheels /tmp/wheels")
    if bases.provision:
        lines.append(f"COPY --from=build /runtime-libs {RUNTIME_LIBS}")
        lines.append(f"ENV LD_LIBRARY_PATH={RUNTIME_LIBS}")
    lines += _run(
        _words([py, "-m", "venv", "/opt/venv"], "python"),
        "/opt/venv/bin/pip install --no-cache-dir /tmp/wheels/*.whl",
        "rm -rf /tmp/wheels",
    )
    lines.append("ENV PATH=/opt/venv/bin:$PATH")
    lines.append('CMD ["python", "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"]')
    return lines


def render_dockerfile(spec: DockerfileSpec) -> str:
    """The whole Dockerfile."""
    bases = spec.bases
    parts = [
        header(spec),
        [_arg("DEVEL_IMAGE", bases.devel), _arg("RUNTIME_IMAGE", bases.runtime)],
        devel_stage(spec),
        build_stage(spec),
        runtime_stage(spec),
    ]
    return "\n\n".join("\n".join(part) for part in parts) + "\n"
