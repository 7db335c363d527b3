"""``srcbuild plan torch|torchvision --recipe R --format dockerfile``: a multi-stage Dockerfile.

Stages:

* ``devel``: the base from ``images.choose_bases`` (the official CUDA devel image, or the plain
  Python image plus ``srcbuild toolchain install --recipe R``), with srcbuild installed from the
  build context (a srcbuild checkout or sdist) into ``/opt/srcbuild``;
* ``build``: runs ``srcbuild torch`` (and ``srcbuild torchvision``) with the work dir and the
  wheel cache on cache mounts, and copies the wheels to ``/wheels``;
* ``runtime``: the matching runtime image with only the wheels installed in ``/opt/venv`` (on the
  plain image, with the CUDA libraries the wheel links, copied from the provisioned toolkit).

Build arguments carry the mirrors (``SRCBUILD_MIRROR`` as ``--mirror``, ``SRCBUILD_NVIDIA_MIRROR``),
shared wheel caches (``SRCBUILD_REMOTES``) and the package index (``PIP_INDEX_URL``).
``srcbuild container build`` uses the same text (``DockerfileSpec``) and builds only ``devel``.
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from srcbuild.container.images import Bases
from srcbuild.recipe import Recipe

SRCBUILD_VENV = "/opt/srcbuild"
WORK = "/srcbuild/work"
CACHE = "/srcbuild/cache"
TOOLCHAINS = "/srcbuild/toolchains"
RECIPES = "/srcbuild/recipes"
RUNTIME_LIBS = "/usr/local/lib/srcbuild-cuda"
CONTEXT_FILES = ("pyproject.toml", "README.md", "srcbuild", "recipes", "patches")
CACHE_IDS = ("srcbuild-work", "srcbuild-wheels")


@dataclass(frozen=True)
class DockerfileSpec:
    """What the Dockerfile builds: decided from the recipe, the bases and the plan's options."""

    recipe: Recipe
    package: str  # torch | torchvision
    bases: Bases
    mirrors: tuple[str, ...] = ()
    recipe_file: str | None = None  # a recipe outside the catalog: its file name in the context


def _run(*lines: str) -> list[str]:
    """One RUN instruction, a shell line per element, joined with ``&&``."""
    out = ["RUN " + lines[0]]
    out += [f"  && {line}" for line in lines[1:]]
    return [line + (" \\" if i < len(out) - 1 else "") for i, line in enumerate(out)]


def _apt(packages: Sequence[str]) -> list[str]:
    return _run(
        "apt-get update",
        f"apt-get install -y --no-install-recommends {' '.join(packages)}",
        "rm -rf /var/lib/apt/lists/*",
    )


def recipe_arg(spec: DockerfileSpec) -> str:
    return f"{RECIPES}/{spec.recipe_file}" if spec.recipe_file else spec.recipe.name


def header(spec: DockerfileSpec) -> list[str]:
    recipe, bases = spec.recipe, spec.bases
    lines = [
        "# syntax=docker/dockerfile:1",
        f"# {spec.package} for recipe {recipe.name}: `srcbuild plan {spec.package} --recipe {recipe.name} "
        "--format dockerfile`.",
        "# Build it from a srcbuild checkout (the context needs " + ", ".join(CONTEXT_FILES) + "):",
        f"#   docker build -f Dockerfile -t {spec.package}-{recipe.name}:{recipe.torch.tag} .",
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
    return lines


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
        packages += [py, f"{py}-venv", f"gcc-{gcc}", f"g++-{gcc}"]
    if bases.kind != "custom":
        lines += _apt(packages)
    lines.append("COPY pyproject.toml README.md /opt/srcbuild-src/")
    lines += [f"COPY {name} /opt/srcbuild-src/{name}" for name in CONTEXT_FILES[2:]]
    if spec.recipe_file:
        lines.append(f"COPY recipes-extra/{spec.recipe_file} {RECIPES}/{spec.recipe_file}")
    lines += _run(f"{py} -m venv {SRCBUILD_VENV}", f"{SRCBUILD_VENV}/bin/pip install --no-cache-dir /opt/srcbuild-src")
    env = {
        "PATH": f"{SRCBUILD_VENV}/bin:$PATH",
        "SRCBUILD_WORK_DIR": WORK,
        "SRCBUILD_CACHE_DIR": CACHE,
        "SRCBUILD_TOOLCHAIN_DIR": TOOLCHAINS,
    }
    lines.append("ENV " + " \\\n    ".join(f"{k}={v}" for k, v in env.items()))
    if bases.provision:
        lines.append(f"RUN srcbuild toolchain install --recipe {recipe_arg(spec)}")
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
    lines.append(f"  && {shlex.join(argv)} --json > {out} \\")
    lines.append(f'  && cp "$({wheel})" /wheels/')
    return lines


def build_stage(spec: DockerfileSpec) -> list[str]:
    mirror = " ".join(spec.mirrors)
    lines = ["FROM devel AS build", f"ARG SRCBUILD_MIRROR={mirror}", "ARG SRCBUILD_REMOTES="]
    lines += _build_one("torch", spec)
    if spec.package == "torchvision":
        lines += _build_one("torchvision", spec)
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
        f"{py} -m venv /opt/venv",
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
        [f"ARG DEVEL_IMAGE={bases.devel}", f"ARG RUNTIME_IMAGE={bases.runtime}"],
        devel_stage(spec),
        build_stage(spec),
        runtime_stage(spec),
    ]
    return "\n\n".join("\n".join(part) for part in parts) + "\n"
