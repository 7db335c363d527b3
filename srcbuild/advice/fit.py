"""Whether one catalog recipe fits one GPU: the single verdict ``compat``, ``recommend`` and ``doctor`` show.

A recipe fits a GPU when its wheel will hold kernels the GPU can run (SASS of the same major and
a minor no higher, or PTX of a lower capability), its pins pass every compatibility rule, and the
GPU's driver (or, when the driver is not known, the newest driver for that GPU) runs its CUDA. A
recipe whose only kernels for the GPU are PTX from an older architecture does not fit a GPU that
official wheels carry SASS for: the official wheel is the better answer there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from srcbuild.advice.window import OfficialWheel, branch_runs, driver_runs, version
from srcbuild.capability import ComputeCapability
from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import KnowledgeBase
from srcbuild.recipe import Recipe
from srcbuild.records import record

FITS, NEEDS_DRIVER, NO = "fits", "needs-driver", "no"
ORDER = {FITS: 0, NEEDS_DRIVER: 1, NO: 2}
NEWER_THAN_KNOWLEDGE = "-newer-than-knowledge"  # rules.tags: a release the knowledge base does not have yet


@record
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
    mpi: bool = False

    @property
    def fits(self) -> bool:
        return self.status == FITS

    @property
    def summary(self) -> str:
        tv = f", torchvision {self.torchvision}" if self.torchvision else ""
        mpi = ", MPI" if self.mpi else ""
        return f"torch {self.torch}{tv}, CUDA {self.cuda or 'none'}, gcc {self.gcc}, Python {self.python}{mpi}"

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "status": self.status,
            "torch": self.torch,
            "torchvision": self.torchvision,
            "cuda": self.cuda,
            "gcc": self.gcc,
            "python": self.python,
            "mpi": self.mpi,
            "native": self.native,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
        }


def strip_tag(tag: str) -> str:
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
    return [f for f in _findings(kb, recipe) if f.severity is Severity.ERROR]


def _findings(kb: KnowledgeBase, recipe: Recipe) -> list[Finding]:
    from srcbuild.rules import check_recipe  # the rules import the knowledge this package reads

    return check_recipe(recipe, kb)


def judge(
    kb: KnowledgeBase,
    recipe: Recipe,
    cc: ComputeCapability,
    driver: str | None,
    last_branch: int | None,
    official: OfficialWheel | None = None,
) -> RecipeFit:
    """The verdict for ``recipe`` on a GPU of capability ``cc`` (driver ``driver`` when known)."""
    reasons: list[str] = []
    notes: list[str] = []
    status = FITS
    covered, native, how = coverage(recipe, cc)
    if covered and not native and official is not None:
        reasons.append(
            f"It has {how.removeprefix('only ').split(',')[0]} only, and the official torch {official.torch} "
            f"{official.cuda_tag} wheel has SASS for {cc}"
        )
        status = NO
    elif covered:
        notes.append(how)
    else:
        reasons.append(how[0].upper() + how[1:])
        status = NO
    found = _findings(kb, recipe)
    errors = [f for f in found if f.severity is Severity.ERROR]
    if errors:
        reasons.extend(f.message for f in errors)
        status = NO
    notes.extend(f"warning: {f.message}" for f in found if f.rule.endswith(NEWER_THAN_KNOWLEDGE))
    cuda = recipe.toolchain.cuda
    if cuda is not None and status == FITS:
        status = _driver_verdict(kb, cuda, driver, last_branch, reasons, notes)
    return RecipeFit(
        recipe=recipe.name,
        torch=strip_tag(recipe.torch.tag),
        torchvision=strip_tag(vision.tag) if (vision := recipe.pin_of("torchvision")) else None,
        cuda=cuda,
        gcc=recipe.toolchain.gcc,
        python=recipe.toolchain.python,
        status=status,
        reasons=tuple(reasons),
        notes=tuple(notes),
        native=native,
        mpi=recipe.mpi.enabled,
    )


def _driver_verdict(
    kb: KnowledgeBase, cuda: str, driver: str | None, last_branch: int | None, reasons: list[str], notes: list[str]
) -> str:
    if driver is not None:
        check = driver_runs(kb, driver, cuda)
        if check.ok:
            if check.note:
                notes.append(f"driver {driver} runs CUDA {cuda} {check.note}")
            return FITS
        newest = branch_runs(kb, last_branch, cuda) if last_branch else None
        if newest is not None and not newest.ok:
            reasons.append(_last_branch_cannot(last_branch, cuda, newest.note))
            return NO
        reasons.append(f"{check.note}; this machine has {driver}")
        return NEEDS_DRIVER
    if last_branch is not None:
        newest = branch_runs(kb, last_branch, cuda)
        if not newest.ok:
            reasons.append(_last_branch_cannot(last_branch, cuda, newest.note))
            return NO
        if newest.note:
            notes.append(f"the R{last_branch} driver runs CUDA {cuda} {newest.note}")
    return FITS


def _last_branch_cannot(branch: int | None, cuda: str, why: str) -> str:
    return f"the last driver branch for this GPU (R{branch}) cannot run CUDA {cuda}: {why}"


def rank(fits: Sequence[RecipeFit]) -> tuple[RecipeFit, ...]:
    """Fitting recipes first, those with SASS for the GPU before PTX-only ones, newest torch first."""
    ordered = sorted(fits, key=lambda f: f.recipe)
    ordered = sorted(ordered, key=lambda f: version(f.torch), reverse=True)
    return tuple(sorted(ordered, key=lambda f: (ORDER[f.status], not f.native)))


def judge_all(
    kb: KnowledgeBase,
    recipes: Sequence[Recipe],
    cc: ComputeCapability,
    driver: str | None,
    last_branch: int | None,
    official: OfficialWheel | None,
) -> tuple[RecipeFit, ...]:
    """Every recipe with a CUDA toolkit judged for one GPU, best first."""
    return rank([judge(kb, r, cc, driver, last_branch, official) for r in recipes if r.toolchain.cuda is not None])
