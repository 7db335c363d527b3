"""``srcbuild recommend``: what to install on a GPU first, and which catalog recipe to build when a build is needed.

When an official PyTorch wheel carries kernels for the GPU (and the driver runs its CUDA), the
answer is that wheel's pip command; a recipe is recommended only for what the wheel lacks (MPI with
``--mpi``, or a newer torch than the official wheels carry for that GPU), or when no official wheel
covers the GPU. Each recipe's verdict comes from ``srcbuild.advice.fit`` (the one ``compat`` and
``doctor`` show): fitting ones by newest torch first, then those that need a newer driver, then
those that cannot fit, each with its reasons.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Sequence
from typing import Any

from srcbuild.advice.fit import FITS, NEEDS_DRIVER, NO, RecipeFit, coverage, judge_all, rank, rule_errors
from srcbuild.advice.python import PythonToMake, python_to_make
from srcbuild.advice.window import OfficialWheel, Window, version, window_for
from srcbuild.capability import ComputeCapability
from srcbuild.host.facts import DriverInfo, GpuInfo
from srcbuild.knowledge import KnowledgeBase
from srcbuild.recipe import Recipe
from srcbuild.records import record

__all__ = [
    "FITS",
    "NEEDS_DRIVER",
    "NO",
    "GpuAdvice",
    "RecipeFit",
    "Recommendation",
    "advise",
    "coverage",
    "rank",
    "recommend",
    "rule_errors",
]


@record
class GpuAdvice:
    """Everything ``recommend`` says about one GPU model (identical GPUs are counted, not repeated)."""

    gpu: GpuInfo
    count: int
    window: Window | None
    recipes: tuple[RecipeFit, ...]
    want_mpi: bool = False
    readings: tuple[GpuAdvice, ...] = ()  # an ambiguous name: the advice for each GPU it may be
    python_here: frozenset[str] | None = None  # the machine's Python versions (None: not looked at)
    python_active: frozenset[str] | None = None  # the active environment's (empty: none is active)

    @property
    def official(self) -> OfficialWheel | None:
        return self.window.official if self.window else None

    @property
    def best(self) -> RecipeFit | None:
        """The recipe to build: when an official wheel covers the GPU, only for what it lacks (MPI, newer torch)."""
        fitting = [r for r in self.recipes if r.status == FITS and (r.mpi or not self.want_mpi)]
        official = self.official
        if official is not None and not self.want_mpi:
            fitting = [r for r in fitting if version(r.torch) > version(official.torch)]
        return fitting[0] if fitting else None

    @property
    def make_python(self) -> PythonToMake | None:
        """The Python to make first when the official wheel is the answer and none here runs it."""
        if self.lead != "wheel":
            return None
        return python_to_make(self.official, self.python_here, self.python_active)

    @property
    def lead(self) -> str:
        """What to do first: "wheel" (pip install), "recipe" (build), or "" (nothing fits)."""
        if self.official is not None and not self.want_mpi:
            return "wheel"
        return "recipe" if self.best is not None else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.to_json(),
            "count": self.count,
            "window": self.window.to_json() if self.window else None,
            "lead": self.lead,
            "pip": self.official.pip if self.official and self.lead == "wheel" else None,
            "make_python": self.make_python.to_json() if self.make_python else None,
            "recommended": self.best.recipe if self.best else None,
            "recipes": [r.to_json() for r in self.recipes],
            "readings": [r.to_json() for r in self.readings],
            "ambiguous": bool(self.readings),
            "tell_which": TELL_WHICH if self.readings else None,
        }


# what an answer for an ambiguous name asks the user to run (the text and the JSON say the same)
TELL_WHICH = "lspci -nn | grep -i nvidia"


@record
class Recommendation:
    origin: str  # "this machine", "--lspci FILE", ...
    driver: DriverInfo | None
    gpus: tuple[GpuAdvice, ...]
    notes: tuple[str, ...] = ()
    checked: str = ""  # the date the knowledge was last checked
    newest_known: str = ""  # the newest torch release the knowledge holds
    newest_seen: str = ""  # the newest release of each tracked project on the index, at the last refresh
    stale: str = ""  # a line when the knowledge is older than STALE_DAYS

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "knowledge_checked": self.checked or None,
            "knowledge_newest_torch": self.newest_known or None,
            "knowledge_newest_seen": self.newest_seen or None,
            "knowledge_stale": self.stale or None,
            "driver": {"version": self.driver.version, "source": self.driver.source} if self.driver else None,
            "gpus": [g.to_json() for g in self.gpus],
            "notes": list(self.notes),
        }


def advise(
    kb: KnowledgeBase,
    gpu: GpuInfo,
    count: int,
    driver: DriverInfo | None,
    recipes: Sequence[Recipe],
    want_mpi: bool = False,
    python_here: frozenset[str] | None = None,
    python_active: frozenset[str] | None = None,
) -> GpuAdvice:
    """The window of one GPU and the verdict of every recipe on it (the same verdict ``compat`` shows)."""
    if gpu.cc is None:
        readings = tuple(
            advise(
                kb,
                dataclasses.replace(gpu, cc=cc, chip=chips, candidates=()),
                count,
                driver,
                recipes,
                want_mpi,
                python_here,
                python_active,
            )
            for cc, chips in _readings(kb, gpu)
        )
        return GpuAdvice(gpu, count, None, (), want_mpi, readings, python_here, python_active)
    version_ = driver.version if driver else None
    window = window_for(kb, gpu.cc, version_)
    fits = judge_all(kb, recipes, gpu.cc, version_, window.last_branch, window.official)
    return GpuAdvice(gpu, count, window, fits, want_mpi, python_here=python_here, python_active=python_active)


def _readings(kb: KnowledgeBase, gpu: GpuInfo) -> list[tuple[ComputeCapability, str]]:
    """(capability, chips) for each reading of an ambiguous name ("GK104 (compute capability 3.0, ...)")."""
    found = []
    for text in gpu.candidates:
        m = re.match(r"^(\S+) \(compute capability (\d+\.\d)", text)
        if m:
            found.append((ComputeCapability.parse(m.group(2)), m.group(1)))
    return found


def recommend(
    kb: KnowledgeBase,
    gpus: Sequence[GpuInfo],
    driver: DriverInfo | None,
    recipes: Sequence[Recipe],
    origin: str,
    want_mpi: bool = False,
    notes: Sequence[str] = (),
    python_here: frozenset[str] | None = None,
    python_active: frozenset[str] | None = None,
) -> Recommendation:
    """Advice for each distinct GPU model in ``gpus``; ``python_here`` (this machine's Python
    versions) adds how to make the Python an official wheel needs when none of them runs it."""
    groups: dict[tuple[str, str | None, str | None], list[GpuInfo]] = {}
    for gpu in gpus:
        groups.setdefault((gpu.name, str(gpu.cc) if gpu.cc else None, gpu.pci_id), []).append(gpu)
    advice = tuple(
        advise(kb, members[0], len(members), driver, recipes, want_mpi, python_here, python_active)
        for members in groups.values()
    )
    found = () if gpus else ("no NVIDIA GPU found; describe one with --gpu, --pci-id or --paste FILE",)
    return Recommendation(
        origin,
        driver,
        advice,
        (*found, *notes),
        kb.checked,
        kb.newest_known_torch,
        kb.newest_seen,
        kb.stale_note(datetime.date.today()),
    )
