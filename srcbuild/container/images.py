"""Which base images a recipe's container build uses, from ``data/cuda_images.toml``.

``choose_bases(recipe)`` answers with the official CUDA devel and runtime tags for the recipe's
CUDA and cuDNN major where NVIDIA published them and has not withdrawn them, and otherwise the
plain Debian Python image on which srcbuild provisions the toolchain itself. ``--base IMAGE``
(``custom_bases``) replaces both with the user's image, which must hold the toolchain.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from srcbuild.errors import UsageError
from srcbuild.recipe import Recipe
from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).with_name("data") / "cuda_images.toml"


@record
class CudaImage:
    """One row of the data: the official devel/runtime tags of one CUDA release."""

    cuda: str
    cudnn: str
    os: str
    devel: str
    runtime: str
    status: str  # published | eol | withdrawn
    since: str
    source: str


@record
class Bases:
    """The images of the Dockerfile's stages, and why."""

    kind: str  # "nvidia" | "plain" | "custom"
    devel: str
    runtime: str
    provision: bool  # run `srcbuild toolchain install` in the devel stage
    srcbuild_python: str  # the interpreter srcbuild runs on in the devel stage ("python3.10")
    runtime_python: str  # the interpreter the runtime stage installs the wheel with
    apt_python: bool  # install the interpreters with apt (official CUDA images have none)
    notes: tuple[str, ...]


@lru_cache(maxsize=1)
def load_data(path: Path = DATA) -> dict[str, Any]:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def images() -> tuple[CudaImage, ...]:
    return tuple(CudaImage(**row) for row in load_data()["image"])


def find_image(cuda: Optional[str]) -> Optional[CudaImage]:
    """The row of a CUDA major.minor (``"11.8"``), or None."""
    if cuda is None:
        return None
    wanted = ".".join(cuda.split(".")[:2])
    return next((row for row in images() if row.cuda == wanted), None)


def _plain(recipe: Recipe, notes: list[str]) -> Bases:
    plain = load_data()["plain"]
    python = recipe.toolchain.python
    if python not in plain["pythons"]:
        raise UsageError(
            f"recipe {recipe.name}: no plain Python {python} image in {DATA.name} (has {', '.join(plain['pythons'])})",
            f"srcbuild plan torch --recipe {recipe.name} --format dockerfile --base IMAGE_WITH_THE_TOOLCHAIN",
        )
    notes.append(f"plain image: srcbuild provisions CUDA, cuDNN and gcc itself ({plain['source']})")
    return Bases(
        "plain",
        plain["devel"],
        plain["runtime"].format(python=python),
        provision=recipe.toolchain.cuda is not None,
        srcbuild_python="python3",
        runtime_python="python3",
        apt_python=False,
        notes=tuple(notes),
    )


def choose_bases(recipe: Recipe) -> Bases:
    """The official CUDA images for the recipe when they fit and exist, else the plain image."""
    notes: list[str] = []
    row = find_image(recipe.toolchain.cuda)
    if recipe.toolchain.cuda is None:
        notes.append("CPU-only recipe: no CUDA image needed")
        return _plain(recipe, notes)
    if row is None:
        notes.append(f"no official CUDA {recipe.toolchain.cuda} image in {DATA.name}")
        return _plain(recipe, notes)
    if row.status == "withdrawn":
        notes.append(f"{row.devel} was withdrawn by NVIDIA ({row.since}; {row.source})")
        return _plain(recipe, notes)
    cudnn = recipe.toolchain.cudnn
    if cudnn is not None and cudnn.split(".")[0] != row.cudnn:
        notes.append(f"{row.devel} carries cuDNN {row.cudnn}, the recipe pins cuDNN {cudnn}")
        return _plain(recipe, notes)
    system = load_data()["os"].get(row.os, {})
    python = recipe.toolchain.python
    if python not in system.get("pythons", ()) or "srcbuild_python" not in system:
        notes.append(f"{row.os} of {row.devel} has no Python {python} package for the runtime image")
        return _plain(recipe, notes)
    if row.status == "eol":
        notes.append(
            f"{row.devel} is past end of life since {row.since}: NVIDIA deletes EOL tags after six months, "
            f"so a pull may fail ({row.source})"
        )
    else:
        notes.append(f"official CUDA image ({row.source})")
    return Bases(
        "nvidia",
        row.devel,
        row.runtime,
        provision=False,
        srcbuild_python=f"python{system['srcbuild_python']}",
        runtime_python=f"python{python}",
        apt_python=True,
        notes=tuple(notes),
    )


def custom_bases(image: str, recipe: Recipe) -> Bases:
    """``--base IMAGE``: the user's image for both stages; it must hold the recipe's toolchain."""
    if ":" not in image.rsplit("/", 1)[-1] and "@" not in image:
        raise UsageError(f"--base {image}: give an explicit tag or digest", f"--base {image}:<tag>")
    if image.endswith(":latest"):
        raise UsageError(f"--base {image}: `latest` moves under you", "give the tag of a fixed release")
    notes = (f"--base {image}: the image must hold the toolchain of recipe {recipe.name}",)
    return Bases("custom", image, image, False, "python3", "python3", False, notes)
