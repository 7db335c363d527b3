"""Recipe combinations for the rule tests, built from catalog recipes with dataclasses.replace."""

from __future__ import annotations

import dataclasses
import os
from functools import lru_cache

from srcbuild.capability import ComputeCapability
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog, SourcePin

_KEEP = object()


@lru_cache(maxsize=1)
def catalog() -> tuple[Recipe, ...]:
    return tuple(RecipeCatalog(Paths.resolve(environ=os.environ)).load_all())


def base(name: str) -> Recipe:
    return next(r for r in catalog() if r.name == name)


def combo(
    name: str,
    *,
    torch: str | None = None,
    torchvision: object = _KEEP,
    torchaudio: object = _KEEP,
    python: str | None = None,
    gcc: str | None = None,
    cuda: object = _KEEP,
    cudnn: object = _KEEP,
    arch: tuple[str, ...] | None = None,
    ptx: bool | None = None,
    env: dict[str, str] | None = None,
) -> Recipe:
    """``name`` from the catalog with the given pins replaced (renamed "combo" so no hint names it)."""
    recipe = base(name)
    toolchain = recipe.toolchain
    changes: dict[str, object] = {}
    if python is not None:
        changes["python"] = python
    if gcc is not None:
        changes["gcc"] = gcc
    if cuda is not _KEEP:
        changes["cuda"] = cuda
    if cudnn is not _KEEP:
        changes["cudnn"] = cudnn
    gpu = recipe.gpu
    if arch is not None:
        gpu = dataclasses.replace(gpu, arch=tuple(ComputeCapability.parse(a) for a in arch))
    if ptx is not None:
        gpu = dataclasses.replace(gpu, ptx=ptx)
    build = recipe.build if env is None else dataclasses.replace(recipe.build, env=tuple(env.items()))
    tv = recipe.pin_of("torchvision")
    if torchvision is not _KEEP:
        tv = None if torchvision is None else SourcePin(str(torchvision), tv.repo if tv else "")
    ta = recipe.pin_of("torchaudio")
    if torchaudio is not _KEEP:
        ta = None if torchaudio is None else SourcePin(str(torchaudio), ta.repo if ta else "")
    elif torch:  # another torch: the catalog's torchaudio was made for the old one
        ta = None
    pins = (("torchvision", tv),) * (tv is not None) + (("torchaudio", ta),) * (ta is not None)
    return dataclasses.replace(
        recipe,
        name="combo",
        torch=SourcePin(torch, recipe.torch.repo) if torch else recipe.torch,
        pins=pins,
        toolchain=dataclasses.replace(toolchain, **changes),
        gpu=gpu,
        build=build,
    )
