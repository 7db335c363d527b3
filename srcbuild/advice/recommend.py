"""``srcbuild recommend``: which catalog recipe fits a GPU (and driver), best first, and why the others do not.

A recipe fits a GPU when its wheel will hold kernels the GPU can run (SASS of the same major and a
minor no higher, or PTX of a lower capability), its pins pass every compatibility rule, and the
GPU's driver (or, when the driver is not known, the newest driver for that GPU) runs its CUDA.
Recipes are ranked: fitting ones by newest torch first, then those that need a newer driver, then
those that cannot fit, each with its reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from srcbuild.advice.window import Window, branch_runs, driver_runs, version, window_for
from srcbuild.capability import ComputeCapability
from srcbuild.findings import Finding, Severity
from srcbuild.host.facts import DriverInfo, GpuInfo
from srcbuild.knowledge import KnowledgeBase
from srcbuild.recipe import Recipe

FITS, NEEDS_DRIVER, NO = "fits", "needs-driver", "no"
_ORDER = {FITS: 0, NEEDS_DRIVER: 1, NO: 2}


@dataclass(frozen=True)
class RecipeFit:
    """One catalog recipe judged for one GPU."""

    recipe: str
    torch: str
    torchvision: str | None
    cuda: str | None
    gcc: str
    python: str
    status: str  # fits | needs-driver | no
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    native: bool = False  # SASS for the GPU, not only PTX the driver must compile

    @property
    def summary(self) -> str:
        tv = f", torchvision {self.torchvision}" if self.torchvision else ""
        return f"torch {self.torch}{tv}, CUDA {self.cuda or 'none'}, gcc {self.gcc}, Python {self.python}"

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "status": self.status,
            "torch": self.torch,
            "torchvision": self.torchvision,
            "cuda": self.cuda,
            "gcc": self.gcc,
            "python": self.python,
            "native": self.native,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class GpuAdvice:
    """Everything ``recommend`` says about one GPU model (identical GPUs are counted, not repeated)."""

    gpu: GpuInfo
    count: int
    window: Window | None
    recipes: tuple[RecipeFit, ...]

    @property
    def best(self) -> RecipeFit | None:
        return next((r for r in self.recipes if r.status == FITS), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.to_json(),
            "count": self.count,
            "window": self.window.to_json() if self.window else None,
            "recommended": self.best.recipe if self.best else None,
            "recipes": [r.to_json() for r in self.recipes],
        }


@dataclass(frozen=True)
class Recommendation:
    origin: str  # "this machine", "--lspci FILE", ...
    driver: DriverInfo | None
    gpus: tuple[GpuAdvice, ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "driver": {"version": self.driver.version, "source": self.driver.source} if self.driver else None,
            "gpus": [g.to_json() for g in self.gpus],
            "notes": list(self.notes),
        }


def _strip_tag(tag: str) -> str:
    return tag[1:] if tag.startswith("v") else tag


def coverage(recipe: Recipe, cc: ComputeCapability) -> tuple[bool, bool, str]:
    """Whether the recipe's wheel has kernels ``cc`` runs: (ok, as SASS, how or why not).

    SASS built for X.y runs on X.z with z >= y; PTX for a lower capability is compiled by the
    driver at first use (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility").
    """
    archs = sorted(recipe.gpu.arch)
    if not archs:
        return False, False, "it is a CPU-only build"
    sass = [a for a in archs if a.major == cc.major and a.minor <= cc.minor]
    if sass:
        return True, True, f"SASS for {sass[-1]}"
    if recipe.gpu.ptx and archs[-1] < cc:
        return True, False, f"only PTX for {archs[-1]}, which the driver compiles at first use"
    return False, False, f"it builds for {', '.join(str(a) for a in archs)}, not for {cc}"


def rule_errors(kb: KnowledgeBase, recipe: Recipe) -> list[Finding]:
    """The compatibility rules' errors for ``recipe`` (warnings do not stop a recommendation)."""
    from srcbuild.rules import check_recipe

    return [f for f in check_recipe(recipe, kb) if f.severity is Severity.ERROR]


def judge(
    kb: KnowledgeBase, recipe: Recipe, cc: ComputeCapability, driver: str | None, last_branch: int | None
) -> RecipeFit:
    reasons: list[str] = []
    notes: list[str] = []
    status = FITS
    covered, native, how = coverage(recipe, cc)
    if covered:
        notes.append(how)
    else:
        reasons.append(how[0].upper() + how[1:])
        status = NO
    errors = rule_errors(kb, recipe)
    if errors:
        reasons.extend(f.message for f in errors)
        status = NO
    cuda = recipe.toolchain.cuda
    if cuda is not None and status == FITS:
        if driver is not None:
            check = driver_runs(kb, driver, cuda)
            if check.note and check.ok:
                notes.append(f"driver {driver} runs CUDA {cuda} {check.note}")
            if not check.ok:
                newest = branch_runs(kb, last_branch, cuda) if last_branch else None
                if newest is not None and not newest.ok:
                    reasons.append(
                        f"the last driver branch for this GPU (R{last_branch}) cannot run CUDA {cuda}: {newest.note}"
                    )
                    status = NO
                else:
                    reasons.append(f"{check.note}; this machine has {driver}")
                    status = NEEDS_DRIVER
        elif last_branch is not None:
            newest = branch_runs(kb, last_branch, cuda)
            if not newest.ok:
                reasons.append(
                    f"the last driver branch for this GPU (R{last_branch}) cannot run CUDA {cuda}: {newest.note}"
                )
                status = NO
            elif newest.note:
                notes.append(f"the R{last_branch} driver runs CUDA {cuda} {newest.note}")
    return RecipeFit(
        recipe=recipe.name,
        torch=_strip_tag(recipe.torch.tag),
        torchvision=_strip_tag(recipe.torchvision.tag) if recipe.torchvision else None,
        cuda=cuda,
        gcc=recipe.toolchain.gcc,
        python=recipe.toolchain.python,
        status=status,
        reasons=tuple(reasons),
        notes=tuple(notes),
        native=native,
    )


def rank(fits: Sequence[RecipeFit]) -> tuple[RecipeFit, ...]:
    """Fitting recipes first, those with SASS for the GPU before PTX-only ones, newest torch first."""
    ordered = sorted(fits, key=lambda f: f.recipe)
    ordered = sorted(ordered, key=lambda f: version(f.torch), reverse=True)
    return tuple(sorted(ordered, key=lambda f: (_ORDER[f.status], not f.native)))


def advise(
    kb: KnowledgeBase, gpu: GpuInfo, count: int, driver: DriverInfo | None, recipes: Sequence[Recipe]
) -> GpuAdvice:
    if gpu.cc is None:
        return GpuAdvice(gpu, count, None, ())
    window = window_for(kb, gpu.cc, driver.version if driver else None)
    fits = [judge(kb, r, gpu.cc, driver.version if driver else None, window.last_branch) for r in recipes]
    return GpuAdvice(gpu, count, window, rank(fits))


def recommend(
    kb: KnowledgeBase, gpus: Sequence[GpuInfo], driver: DriverInfo | None, recipes: Sequence[Recipe], origin: str
) -> Recommendation:
    """Advice for each distinct GPU model in ``gpus``."""
    groups: dict[tuple[str, str | None, str | None], list[GpuInfo]] = {}
    for gpu in gpus:
        groups.setdefault((gpu.name, str(gpu.cc) if gpu.cc else None, gpu.pci_id), []).append(gpu)
    advice = tuple(advise(kb, members[0], len(members), driver, recipes) for members in groups.values())
    notes = () if gpus else ("no NVIDIA GPU found; describe one with --gpu, --pci-id, --lspci or --nvidia-smi",)
    return Recommendation(origin, driver, advice, notes)
