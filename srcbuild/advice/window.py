"""What works for one compute capability: the CUDA window, the driver limits, the newest torch, official wheels.

Every answer is read from the knowledge base (``srcbuild.knowledge``); this module only combines
facts. CUDA minor-version compatibility lets a driver older than a toolkit's minimum run it when
the driver is at least the floor of that CUDA major (11.x >= 450.80.02, 12.x >= 525.60.13,
13.x >= 580.65.06), without JIT of newer PTX
(https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from srcbuild.capability import ComputeCapability
from srcbuild.capability import generation as cc_generation
from srcbuild.knowledge import KnowledgeBase, TorchRelease

MINOR_COMPAT_FLOORS = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
MINOR_COMPAT_SOURCE = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"


def version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


@dataclass(frozen=True)
class DriverCheck:
    """Whether a driver runs a CUDA release, and how (natively or through minor-version compatibility)."""

    ok: bool
    note: str  # "" when native; "through CUDA minor-version compatibility ..."; or what it needs


def driver_runs(kb: KnowledgeBase, driver: str, cuda: str) -> DriverCheck:
    """Can driver ``driver`` ("470.82.01") run code built with CUDA ``cuda`` ("11.8")?"""
    release = kb.cuda(cuda)
    if release is None or not release.min_driver:
        return DriverCheck(True, "")
    if version(driver) >= version(str(release.min_driver)):
        return DriverCheck(True, "")
    floor = MINOR_COMPAT_FLOORS.get(int(cuda.split(".")[0]))
    if floor and version(driver) >= version(floor):
        return DriverCheck(True, f"through CUDA minor-version compatibility (driver >= {floor}; no PTX JIT)")
    return DriverCheck(False, f"CUDA {cuda} needs driver >= {release.min_driver}")


def branch_runs(kb: KnowledgeBase, branch: int, cuda: str) -> DriverCheck:
    """Can the newest driver of branch ``branch`` run CUDA ``cuda``?"""
    return driver_runs(kb, f"{branch}.9999", cuda)


def driver_reach(kb: KnowledgeBase, driver: str) -> str | None:
    """What a driver runs, in words: "CUDA up to 11.4 (11.8 through CUDA minor-version compatibility)"."""
    native = kb.max_cuda_for_driver(driver)
    if native is None:
        return None
    major = int(native.split(".")[0])
    same_major = [str(r.version) for r in kb.cuda_releases if int(str(r.version).split(".")[0]) == major]
    newest = max(same_major, key=version) if same_major else native
    floor = MINOR_COMPAT_FLOORS.get(major)
    if version(newest) > version(native) and floor and version(driver) >= version(floor):
        return f"CUDA up to {native} ({newest} through CUDA minor-version compatibility)"
    return f"CUDA up to {native}"


@dataclass(frozen=True)
class GccRange:
    cuda: str
    min_gcc: int | None
    max_gcc: int


@dataclass(frozen=True)
class OfficialWheel:
    """A torch release whose official wheel for ``cuda_tag`` already carries SASS for the GPU."""

    torch: str
    cuda_tag: str
    lowest_cc: str
    driver_note: str = ""

    def to_json(self) -> dict[str, str]:
        return {"torch": self.torch, "cuda_tag": self.cuda_tag, "lowest_cc": self.lowest_cc, "driver": self.driver_note}


@dataclass(frozen=True)
class Window:
    """The toolchain window for one compute capability (and, when known, one driver)."""

    cc: ComputeCapability
    generation: str
    cuda: tuple[str, ...]  # every CUDA release whose nvcc targets cc, oldest first
    gcc: tuple[GccRange, ...]
    last_branch: int | None
    last_branch_cuda: str | None  # newest CUDA the last driver branch runs natively
    last_cuda: str | None  # the last toolkit that targets this generation
    driver: str | None
    driver_cuda: str | None  # newest CUDA the given driver runs natively
    driver_reach: str | None  # the same in words, with minor-version compatibility
    newest_torch: str | None
    newest_torch_cuda: str | None
    reported_torch: str | None  # newest torch reported to build and run there, when that is lower
    reported_source: str
    official: OfficialWheel | None
    source: str

    @property
    def cuda_range(self) -> str:
        return f"{self.cuda[0]} to {self.cuda[-1]}" if self.cuda else "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "compute_capability": str(self.cc),
            "generation": self.generation,
            "cuda": list(self.cuda),
            "gcc_per_cuda": {g.cuda: {"min": g.min_gcc, "max": g.max_gcc} for g in self.gcc},
            "last_driver_branch": self.last_branch,
            "last_driver_branch_cuda": self.last_branch_cuda,
            "last_cuda": self.last_cuda,
            "driver": self.driver,
            "driver_cuda": self.driver_cuda,
            "driver_reach": self.driver_reach,
            "newest_torch": self.newest_torch,
            "newest_torch_cuda": self.newest_torch_cuda,
            "newest_torch_reported": self.reported_torch,
            "newest_torch_reported_source": self.reported_source or None,
            "official_wheel": self.official.to_json() if self.official else None,
            "source": self.source,
        }


def cuda_for_cc(kb: KnowledgeBase, cc: ComputeCapability) -> list[Any]:
    """CUDA releases whose nvcc accepts ``cc``, oldest first."""
    rows = [r for r in kb.cuda_releases if r.accepts_cc(cc)]
    return sorted(rows, key=lambda r: version(r.version))


def patch_releases(release: TorchRelease) -> list[str]:
    """The patch releases of a torch line, newest first ("1.10" -> ["1.10.2", "1.10.1", "1.10.0"])."""
    return sorted((p for p, _ in release.torchvision_map), key=version, reverse=True) or [str(release.version)]


def torch_lines(kb: KnowledgeBase) -> list[Any]:
    return sorted(kb.torch_releases, key=lambda t: version(t.version), reverse=True)


def _in_cuda_range(release: TorchRelease, cuda: str) -> bool:
    if release.cuda_min and version(cuda) < version(str(release.cuda_min)):
        return False
    hi = release.cuda_max
    return not hi or version(cuda) <= version(str(hi))


def newest_torch(kb: KnowledgeBase, cc: ComputeCapability, cudas: Iterable[str]) -> tuple[str, str] | None:
    """(torch release, CUDA) for the newest torch that compiles for ``cc`` with one of ``cudas``."""
    available = sorted(cudas, key=version, reverse=True)
    for release in torch_lines(kb):
        if cc < release.lowest_cc:
            continue
        for cuda in available:
            if _in_cuda_range(release, cuda):
                return patch_releases(release)[0], cuda
    return None


def tag_cuda(tag: str) -> str:
    """ "cu118" -> "11.8", "cu92" -> "9.2"."""
    digits = tag[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def official_wheel(
    kb: KnowledgeBase, cc: ComputeCapability, driver: str | None, last_branch: int | None
) -> OfficialWheel | None:
    """The newest official torch wheel with SASS for ``cc`` that the driver (or the GPU's last driver) runs.

    A wheel whose lowest SASS capability is L carries SASS for every generation from L up, and SASS
    for X.Y runs on X.Z with Z >= Y, so it covers ``cc`` when ``cc >= L``. Patch releases whose wheels
    differ from their line (torch 1.3.0's cu100/cu101 carry sm_30) are looked at too.
    """
    for release in torch_lines(kb):
        for patch in patch_releases(release):
            row = kb.torch(patch) or release
            found = []
            for tag, lowest in row.wheels.items():
                if cc < lowest:
                    continue
                cuda = tag_cuda(tag)
                check = driver_runs(kb, driver, cuda) if driver else None
                if check is not None and not check.ok:
                    continue
                if last_branch is not None and not branch_runs(kb, last_branch, cuda).ok:
                    continue
                found.append(OfficialWheel(patch, tag, str(lowest), check.note if check else ""))
            if found:
                return max(found, key=lambda w: version(tag_cuda(w.cuda_tag)))
    return None


def window_for(kb: KnowledgeBase, cc: ComputeCapability, driver: str | None = None) -> Window:
    rows = cuda_for_cc(kb, cc)
    cudas = tuple(str(r.version) for r in rows)
    limit = kb.last_driver_for(cc)
    last_branch = limit.last_branch if limit else None
    last_cuda = limit.last_cuda if limit else None
    generation = limit.generation if limit else None
    last_branch_cuda = kb.max_cuda_for_driver(f"{last_branch}.9999") if last_branch else None
    driver_cuda = kb.max_cuda_for_driver(driver) if driver else None
    torch = newest_torch(kb, cc, cudas)
    support = kb.arch(cc)
    reported = support.reported_torch if support is not None else None
    if reported is not None and torch is not None and reported == torch[0]:
        reported = None  # nothing to add: the rules' ceiling is also what is reported to work
    return Window(
        cc=cc,
        generation=generation or cc_generation(cc),
        cuda=cudas,
        gcc=tuple(GccRange(str(r.version), r.min_gcc, int(r.max_gcc)) for r in rows),
        last_branch=last_branch,
        last_branch_cuda=last_branch_cuda,
        last_cuda=str(last_cuda) if last_cuda else None,
        driver=driver,
        driver_cuda=driver_cuda,
        driver_reach=driver_reach(kb, driver) if driver else None,
        newest_torch=torch[0] if torch else None,
        newest_torch_cuda=torch[1] if torch else None,
        reported_torch=reported,
        reported_source=support.reported_source if reported and support is not None else "",
        official=official_wheel(kb, cc, driver, last_branch),
        source=limit.source if limit else "",
    )
