"""Kernel sets and the rule that decides whether they run on a GPU of a given compute capability.

The rule (NVIDIA, CUDA C++ Programming Guide):

* "Binary Compatibility": a cubin (SASS) generated for compute capability X.y runs only on
  devices of compute capability X.z with z ≥ y — same major, equal or higher minor
  (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility).
* "PTX Compatibility": PTX produced for compute capability X.Y (``compute_XY``) can be
  JIT-compiled by the driver for any device of compute capability ≥ X.Y
  (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#ptx-compatibility).

Caveat (compat.md §2.1): Kepler's last driver branch is R470 (native CUDA 11.4); it cannot JIT PTX
newer than the driver (https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html),
so a Kepler GPU that depends on PTX from a CUDA ≥ 11.5 build may still fail. ``Coverage.caveat``
says so; the report makes it a warning, not an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge.build_facts import load_build_facts
from srcbuild.records import record

if TYPE_CHECKING:
    from srcbuild.verify.fatbin import FatbinEntry


@record
class Kernels:
    """Compute capabilities (integer form, 35 for 3.5) with SASS and with PTX."""

    sass: frozenset[int] = frozenset()
    ptx: frozenset[int] = frozenset()

    @classmethod
    def from_entries(cls, entries: Iterable[FatbinEntry]) -> Kernels:
        sass: set[int] = set()
        ptx: set[int] = set()
        for e in entries:
            (sass if e.kind == "sass" else ptx).add(e.sm)
        return cls(frozenset(sass), frozenset(ptx))

    def __or__(self, other: Kernels) -> Kernels:
        return Kernels(self.sass | other.sass, self.ptx | other.ptx)

    @property
    def empty(self) -> bool:
        return not self.sass and not self.ptx

    def to_json(self) -> dict[str, list[str]]:
        return {"sass": sm_list(self.sass), "ptx": sm_list(self.ptx)}


def sm_list(sms: Iterable[int]) -> list[str]:
    """``{37, 35}`` -> ``["3.5", "3.7"]``."""
    return [str(ComputeCapability.from_sm(sm)) for sm in sorted(sms)]


def sm_text(sms: Iterable[int]) -> str:
    """``{35, 37, 50}`` -> ``"3.5, 3.7 and 5.0"``; ``"none"`` when empty."""
    items = sm_list(sms)
    if not items:
        return "none"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


@record
class Coverage:
    """How (or whether) a GPU of compute capability ``cc`` can run a kernel set."""

    cc: ComputeCapability
    sass: int | None  # the SASS it runs (35 for sm_35), if any
    ptx: int | None  # the PTX the driver would JIT, if no SASS fits
    caveat: str = ""

    @property
    def runs(self) -> bool:
        return self.sass is not None or self.ptx is not None

    @property
    def via(self) -> str:
        if self.sass is not None:
            return f"SASS sm_{self.sass}"
        if self.ptx is not None:
            return f"PTX compute_{self.ptx} (JIT)"
        return "no kernel image"


def coverage(kernels: Kernels, cc: ComputeCapability, ptx_isa: tuple[int, int] | None = None) -> Coverage:
    """Which image a GPU of ``cc`` would use: the best SASS of its major, else the newest usable PTX.

    ``ptx_isa`` (the newest PTX ISA version in the file) lets the Kepler driver caveat be stated.
    """
    sass = [sm for sm in kernels.sass if sm // 10 == cc.major and sm % 10 <= cc.minor]
    if sass:
        return Coverage(cc, max(sass), None)
    ptx = [sm for sm in kernels.ptx if sm <= cc.sm]
    if not ptx:
        return Coverage(cc, None, None)
    caveat = ""
    # the newest PTX ISA the generation's last driver can JIT (Kepler: R470, ISA 7.4 = CUDA 11.4)
    limit = load_build_facts().ptx_isa_limit(cc)
    if limit is not None and (ptx_isa is None or ptx_isa > limit.max_isa):
        isa = f"PTX ISA {ptx_isa[0]}.{ptx_isa[1]}" if ptx_isa else "the PTX"
        caveat = (
            f"compute capability {cc} runs only through JIT of {isa}; {limit.generation}'s last driver "
            f"(R{limit.driver_branch}) cannot JIT PTX newer than CUDA {limit.max_isa_cuda}, so embed SASS for it "
            "(add it to gpu.arch)"
        )
    return Coverage(cc, None, max(ptx), caveat)


def covers(kernels: Kernels, cc: ComputeCapability) -> bool:
    """True when a GPU of compute capability ``cc`` can run ``kernels`` (SASS or PTX, per the rule above)."""
    return coverage(kernels, cc).runs


def listed_capabilities() -> list[ComputeCapability]:
    """The compute capabilities a kernel listing answers for: every one NVIDIA shipped from Kepler
    (3.0) on, from the knowledge data (``capabilities.toml``)."""
    from srcbuild.capability import known_capabilities

    found = (ComputeCapability.parse(cc) for cc in known_capabilities())
    return sorted(cc for cc in found if cc >= ComputeCapability(3, 0))


def runs_on(kernels: Kernels, ptx_isa: tuple[int, int] | None = None) -> list[Coverage]:
    """The coverage of each ``listed_capabilities`` entry that can run ``kernels``."""
    return [row for row in (coverage(kernels, cc, ptx_isa) for cc in listed_capabilities()) if row.runs]


def generations_text(ccs: Iterable[ComputeCapability]) -> str:
    """``Kepler 3.7, Maxwell, Pascal``: a generation's name alone when all its listed compute
    capabilities are there, else with the ones that are; ``none`` when empty."""
    from srcbuild.capability import generation

    chosen = set(ccs)
    groups: dict[str, list[ComputeCapability]] = {}
    for cc in listed_capabilities():
        groups.setdefault(generation(cc), []).append(cc)
    parts = []
    for name, members in groups.items():
        there = [cc for cc in members if cc in chosen]
        if there:
            parts.append(name if len(there) == len(members) else f"{name} {' '.join(map(str, there))}")
    return ", ".join(parts) or "none"
