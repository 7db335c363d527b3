"""The compatibility window of one GPU: which CUDA, gcc, torch, cuDNN and driver work for its compute
capability, and which catalog recipes fit it. ``srcbuild compat`` renders it; this module only computes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from srcbuild.capability import ComputeCapability, generation
from srcbuild.findings import Severity
from srcbuild.knowledge import versions
from srcbuild.knowledge.base import KnowledgeBase
from srcbuild.knowledge.model import CudaRelease, TorchRelease
from srcbuild.recipe.model import Recipe


@dataclass(frozen=True)
class CudaOption:
    """One CUDA release that targets the GPU, with what goes with it."""

    cuda: str
    gcc_min: int | None
    gcc_max: int
    min_driver: str
    torch_lines: tuple[str, ...]  # torch lines that accept this CUDA and compile for the GPU
    cudnn_lines: tuple[str, ...]  # cuDNN lines with a build for this CUDA that supports the GPU

    @property
    def gcc_range(self) -> str:
        return f"{self.gcc_min}–{self.gcc_max}" if self.gcc_min else f"≤ {self.gcc_max}"


@dataclass(frozen=True)
class RecipeFit:
    name: str
    fits: bool
    torch: str
    cuda: str
    reason: str  # the first error when it does not fit


@dataclass(frozen=True)
class CompatWindow:
    cc: ComputeCapability
    generation: str
    gpu: str  # what the user named ("GeForce GT 750M (GK107)") or ""
    pci_ids: tuple[str, ...]
    cuda: tuple[CudaOption, ...]
    newest_torch: str | None  # "1.13.1"
    newest_torchvision: str | None
    official_wheel: str | None  # "torch 1.3.0 cu101": newest official wheel with SASS for the GPU
    last_driver_branch: int | None
    last_driver_cuda: str | None  # the newest CUDA the last branch runs natively
    last_cuda: str | None
    driver_source: str
    recipes: tuple[RecipeFit, ...]

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["cc"] = str(self.cc)
        for option, raw in zip(self.cuda, data["cuda"]):
            raw["gcc"] = option.gcc_range
        return data


def compat_window(
    kb: KnowledgeBase,
    cc: ComputeCapability,
    catalog: Sequence[Recipe] = (),
    gpu: str = "",
    pci_ids: tuple[str, ...] = (),
) -> CompatWindow:
    from srcbuild.rules import check_recipe  # the rules import this package

    options = tuple(_option(kb, release, cc) for release in kb.cuda_window(cc))
    buildable = [r for r in kb.torch_releases if r.lowest_cc <= cc and any(_accepts(r, o.cuda) for o in options)]
    newest = buildable[-1] if buildable else None
    newest_patch = _newest_patch(newest) if newest else None
    limit = kb.last_driver_for(cc)
    branch = kb.driver_branch(limit.last_branch) if limit.last_branch else None
    fits = []
    for recipe in catalog:
        if recipe.toolchain.cuda is None:
            continue
        narrowed = dataclasses.replace(recipe, gpu=dataclasses.replace(recipe.gpu, arch=(cc,)))
        errors = [f for f in check_recipe(narrowed, kb, catalog) if f.severity is Severity.ERROR]
        fits.append(
            RecipeFit(
                name=recipe.name,
                fits=not errors and cc in recipe.gpu.arch,
                torch=recipe.torch.tag,
                cuda=recipe.toolchain.cuda,
                reason=errors[0].message if errors else ("" if cc in recipe.gpu.arch else f"built for {_arch(recipe)}"),
            )
        )
    fits.sort(key=lambda f: (not f.fits, f.name))
    return CompatWindow(
        cc=cc,
        generation=generation(cc),
        gpu=gpu,
        pci_ids=pci_ids,
        cuda=options,
        newest_torch=newest_patch,
        newest_torchvision=(kb.torchvision_for(newest_patch) or (None,))[-1] if newest_patch else None,
        official_wheel=_official_wheel(kb, cc),
        last_driver_branch=limit.last_branch,
        last_driver_cuda=branch.cuda if branch else None,
        last_cuda=limit.last_cuda,
        driver_source=limit.source,
        recipes=tuple(fits),
    )


def _arch(recipe: Recipe) -> str:
    return ", ".join(str(c) for c in recipe.gpu.arch) or "CPU"


def _option(kb: KnowledgeBase, release: CudaRelease, cc: ComputeCapability) -> CudaOption:
    torch_lines = tuple(r.line for r in kb.torch_releases if r.lowest_cc <= cc and _accepts(r, release.line))
    cudnn_lines: list[str] = []
    for cudnn in kb.cudnn_releases:
        lowest = cudnn.lowest_cc_for(release.line)
        if cudnn.has_build_for(release.line) and lowest is not None and lowest <= cc and not cudnn.unconfirmed:
            line = versions.show(versions.parse(cudnn.version)[:2])
            if line not in cudnn_lines:
                cudnn_lines.append(line)
    return CudaOption(
        cuda=release.line,
        gcc_min=release.min_gcc,
        gcc_max=release.max_gcc,
        min_driver=release.min_driver,
        torch_lines=torch_lines,
        cudnn_lines=tuple(cudnn_lines),
    )


def _accepts(release: TorchRelease, cuda: str) -> bool:
    v = versions.parse(cuda)
    return versions.at_least(v, versions.parse(release.cuda_min)) and (
        release.cuda_max is None or versions.at_most(v, versions.parse(release.cuda_max))
    )


def _newest_patch(release: TorchRelease) -> str:
    patches = [p for p, _ in release.torchvision_map] or [release.line + ".0"]
    return max(patches, key=versions.parse)


def _official_wheel(kb: KnowledgeBase, cc: ComputeCapability) -> str | None:
    """The newest official torch wheel carrying SASS for ``cc`` (no build needed)."""
    for line in reversed(kb.torch_releases):
        for patch in sorted((p for p, _ in line.torchvision_map), key=versions.parse, reverse=True):
            release = kb.torch(patch)
            if release is None:
                continue
            # SASS for X.y runs on X.z with z >= y; the wheels carry SASS for every generation from `lowest` up
            tags = [tag for tag, lowest in release.official_wheels if lowest <= cc]
            if tags:
                return f"torch {patch} {'/'.join(tags)}"
    return None
