"""What works for one compute capability: the CUDA window, the driver limits, the newest torch, official wheels.

This is the one computation of a GPU's window: ``compat``, ``recommend`` and ``doctor`` all render
``window_for``'s answer. Every answer is read from the knowledge base (``srcbuild.knowledge``);
this module only combines facts. CUDA minor-version compatibility lets a driver older than a
toolkit's minimum run it when the driver is at least the floor of that CUDA major, without JIT of
newer PTX; the floors and their source are data (``knowledge/data/build.toml``, ``[[minor_compat]]``).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable
from functools import cache
from typing import Any

from packaging.version import InvalidVersion, Version

from srcbuild.capability import ComputeCapability
from srcbuild.capability import generation as cc_generation
from srcbuild.knowledge import KnowledgeBase, TorchRelease, versions
from srcbuild.knowledge.build_facts import load_build_facts
from srcbuild.knowledge.model import CudaRelease
from srcbuild.records import record


@cache  # a Version is immutable: each text is parsed once (a recommendation compares thousands)
def version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


@record
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
    floor = load_build_facts().minor_compat_floor.get(int(cuda.split(".")[0]))
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
    floor = load_build_facts().minor_compat_floor.get(major)
    if version(newest) > version(native) and floor and version(driver) >= version(floor):
        return f"CUDA up to {native} ({newest} through CUDA minor-version compatibility)"
    return f"CUDA up to {native}"


@record
class GccRange:
    cuda: str
    min_gcc: int | None
    max_gcc: int


@record
class OfficialWheel:
    """A torch release whose official wheel for ``cuda_tag`` already carries SASS for the GPU."""

    torch: str
    cuda_tag: str
    lowest_cc: str
    driver_note: str = ""
    torchvision: str | None = None
    python: str = ""  # "3.10 to 3.14"
    pip: str | None = None  # the command that installs it
    python_min: str = ""  # "3.10"
    python_max: str = ""  # "3.14"
    caveats: tuple[str, ...] = ()
    from_document: bool = False  # its lowest SASS comes from a document: no binary of it was read

    @property
    def sass_evidence(self) -> str:
        """" (from a document, not read from the wheel)" when no binary of it was read, else ""."""
        return " (from a document, not read from the wheel)" if self.from_document else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "torch": self.torch,
            "torchvision": self.torchvision,
            "cuda_tag": self.cuda_tag,
            "lowest_cc": self.lowest_cc,
            "lowest_cc_from": "document" if self.from_document else "binary or release notes",
            "driver": self.driver_note,
            "python": self.python,
            "pip": self.pip,
            "caveats": list(self.caveats),
        }


@record
class CudaOption:
    """One CUDA release that targets the GPU, with what goes with it."""

    cuda: str
    gcc_min: int | None
    gcc_max: int
    min_driver: str | None  # None: not known yet (a named gap of the CUDA row)
    torch_lines: tuple[str, ...]  # torch lines that accept this CUDA and compile for the GPU
    cudnn_lines: tuple[str, ...]  # cuDNN lines with a build for this CUDA that supports the GPU

    @property
    def gcc_range(self) -> str:
        return f"{self.gcc_min}–{self.gcc_max}" if self.gcc_min else f"≤ {self.gcc_max}"

    def to_json(self) -> dict[str, Any]:
        return {
            "cuda": self.cuda,
            "gcc": self.gcc_range,
            "gcc_min": self.gcc_min,
            "gcc_max": self.gcc_max,
            "min_driver": self.min_driver,
            "torch_lines": list(self.torch_lines),
            "cudnn_lines": list(self.cudnn_lines),
        }


@record
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
    reported_torch: str | None  # newest torch reported to build and run there (a build or an official wheel)
    reported_source: str
    official: OfficialWheel | None
    source: str
    options: tuple[CudaOption, ...] = ()
    newest_torchvision: str | None = None
    checked: str = ""  # the date the knowledge was last checked
    newest_known: str = ""  # the newest torch release the knowledge holds (staleness shows)
    stale: str = ""  # a line when the knowledge is older than STALE_DAYS
    runtime_caveats: tuple[str, ...] = ()  # what current torch cannot do there (torch.compile below 7.0)
    # the first CUDA that targets it when that is older than the tables' first release (3.0: 5.0, 3.7: 6.5)
    cuda_first: str | None = None
    cuda_first_source: str = ""  # where that first CUDA comes from (the [[arch]] row's source)

    @property
    def cuda_range(self) -> str:
        """"5.0 to 10.2": from the first CUDA that targets it (even one the tables start after)."""
        return f"{self.cuda_first or self.cuda[0]} to {self.cuda[-1]}" if self.cuda else "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "compute_capability": str(self.cc),
            "generation": self.generation,
            "cuda": list(self.cuda),
            "cuda_first": self.cuda_first or (self.cuda[0] if self.cuda else None),
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
            "cuda_options": [o.to_json() for o in self.options],
            "newest_torchvision": self.newest_torchvision,
            "knowledge_checked": self.checked or None,
            "knowledge_newest_torch": self.newest_known or None,
            "knowledge_stale": self.stale or None,
            "runtime_caveats": list(self.runtime_caveats),
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
                return _described(kb, max(found, key=lambda w: version(tag_cuda(w.cuda_tag))), row, cc)
    return None


def _described(kb: KnowledgeBase, wheel: OfficialWheel, row: TorchRelease, cc: ComputeCapability) -> OfficialWheel:
    """The wheel with its torchvision, Python range, pip command and caveats filled in."""
    torchvision = (kb.torchvision_for(wheel.torch) or (None,))[-1]
    return dataclasses.replace(
        wheel,
        torchvision=torchvision,
        python=f"{row.python_min} to {row.python_max}",
        python_min=row.python_min,
        python_max=row.python_max,
        pip=kb.pip_command(wheel.torch, torchvision, wheel.cuda_tag),
        caveats=tuple(c.message for c in kb.caveats(wheel.torch, wheel.cuda_tag, cc)),
        from_document=row.is_unconfirmed("official_wheels"),
    )


def cuda_options(kb: KnowledgeBase, cc: ComputeCapability) -> tuple[CudaOption, ...]:
    """Each CUDA release that targets ``cc``, with its gcc range, driver floor, torch and cuDNN lines."""
    return tuple(_option(kb, release, cc) for release in kb.cuda_window(cc))


def _option(kb: KnowledgeBase, release: CudaRelease, cc: ComputeCapability) -> CudaOption:
    torch_lines = tuple(r.line for r in kb.torch_releases if r.lowest_cc <= cc and _in_cuda_range(r, release.line))
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


def _first_cuda(support: Any, cudas: tuple[str, ...]) -> str | None:
    """The arch row's first CUDA when it is older than the first release the CUDA table holds."""
    if support is None or not cudas or version(support.cuda_min) >= version(cudas[0]):
        return None
    return str(support.cuda_min)


def window_for(kb: KnowledgeBase, cc: ComputeCapability, driver: str | None = None) -> Window:
    """The window of ``cc`` (and, when given, of driver ``driver``): the one answer every command shows."""
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
    official = official_wheel(kb, cc, driver, last_branch)
    newest_official = official_wheel(kb, cc, None, None)
    # Reported to work: a build someone made and ran there, else the newest official wheel with its kernels.
    reported = support.reported_torch if support is not None else None
    reported_source = support.reported_source if reported and support is not None else ""
    if newest_official is not None and (reported is None or version(newest_official.torch) > version(reported)):
        reported = newest_official.torch
        reported_source = (
            f"official {newest_official.cuda_tag} wheel with SASS for {newest_official.lowest_cc} and up"
            + newest_official.sass_evidence
        )
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
        reported_source=reported_source,
        official=official,
        source=limit.source if limit else "",
        options=cuda_options(kb, cc),
        newest_torchvision=(kb.torchvision_for(torch[0]) or (None,))[-1] if torch else None,
        checked=kb.checked,
        newest_known=kb.newest_known_torch,
        stale=kb.stale_note(datetime.date.today()),
        cuda_first=_first_cuda(support, cudas),
        cuda_first_source=support.source if _first_cuda(support, cudas) and support is not None else "",
        runtime_caveats=tuple(f"{c.message}: {c.advice}" for c in kb.runtime_caveats_for(cc)),
    )
