"""What a build did: each step's outcome, the wheel (or None), diagnoses and the compiler cache's counters."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srcbuild.execute.diagnose import Diagnosis
from srcbuild.plan.model import Plan
from srcbuild.records import record


@record
class CachedWheel:
    """A wheel as its cache entry records it: where it lies, the sha256 its manifest states, and
    the entry's key. Whoever copies the wheel out checks the bytes it copies against ``sha256``
    (the lookup trusts a wheel whose size and mtime are unchanged since it was last hashed)."""

    path: Path
    sha256: str
    entry: str


@record
class StepOutcome:
    id: str
    status: str  # done / skipped / resumed (done earlier) / failed / interrupted
    seconds: float
    log: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "seconds": round(self.seconds, 3), "log": self.log}


@dataclass
class BuildResult:
    """What a build did: the wheel (or None), each step's outcome and any diagnosis."""

    plan: Plan
    wheel: Path | None = None
    cached: bool = False  # the wheel came from the cache; nothing was built
    cached_wheel: CachedWheel | None = None  # the wheel's cache entry (its recorded sha256)
    outcomes: list[StepOutcome] = field(default_factory=list)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compiler_cache: dict[str, Any] | None = None  # hits and misses of the compiler cache (CacheStats)
    canary: dict[str, Any] | None = None  # the canary's readout, units and times (CanaryChecked)

    def to_json(self) -> dict[str, Any]:
        return {
            "package": self.plan.package,
            "recipe": self.plan.recipe,
            "version": self.plan.version,
            "wheel": str(self.wheel) if self.wheel else None,
            "cached": self.cached,
            "steps": [o.to_json() for o in self.outcomes],
            "diagnoses": [d.to_json() for d in self.diagnoses],
            "notes": self.notes,
            "compiler_cache": self.compiler_cache,
            "canary": self.canary,
        }
