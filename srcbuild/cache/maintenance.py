"""Keeping a store healthy: ``verify`` re-hashes every wheel, ``gc`` keeps the newest N or fits a size.

Results are data (``Problem``, ``GcResult``); the CLI renders them.
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path

from srcbuild.cache.index import EntrySummary, summaries
from srcbuild.cache.index import entry_size as directory_size
from srcbuild.cache.store import CacheEntry, WheelCache
from srcbuild.errors import CacheIntegrityError, UsageError
from srcbuild.records import record

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """``10G`` -> 10737418240 (binary units; ``10GB`` and ``10GiB`` mean the same)."""
    m = _SIZE.match(text)
    if not m:
        raise UsageError(f"--max-size {text!r} is not a size", "write it like 500M, 10G or 1T")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def entry_size(entry: CacheEntry) -> int:
    """Bytes of the files in the entry's directory."""
    return directory_size(entry.path)


@record
class Problem:
    """A damaged entry: its directory, what is wrong, and whether it was removed."""

    path: Path
    message: str
    removed: bool

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "problem": self.message, "removed": self.removed}


@record
class VerifyResult:
    checked: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        return {"checked": self.checked, "ok": self.ok, "problems": [p.to_json() for p in self.problems]}


def verify_store(cache: WheelCache, remove: bool = False) -> VerifyResult:
    """Re-hash every wheel against its manifest; optionally remove what is damaged."""
    problems: list[Problem] = []
    checked = 0
    for path, message in list(cache.damaged()):
        checked += 1
        if remove:
            cache.discard(path)
        problems.append(Problem(path, message, remove))
    for entry in list(cache.entries()):
        checked += 1
        try:
            entry.check()
        except CacheIntegrityError as exc:
            if remove:
                cache.remove(entry)
            problems.append(Problem(entry.path, exc.message, remove))
    return VerifyResult(checked, tuple(problems))


@record
class GcResult:
    removed: tuple[EntrySummary, ...]
    kept: int
    freed: int
    staging_cleaned: int = 0
    sizes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "removed": [
                {"entry_key": e.key, "wheel": e.wheel, "size": self.sizes.get(e.key, 0)} for e in self.removed
            ],
            "kept": self.kept,
            "freed": self.freed,
            "staging_cleaned": self.staging_cleaned,
        }


def gc(cache: WheelCache, keep: int | None = None, max_size: int | None = None, dry_run: bool = False) -> GcResult:
    """Keep the newest ``keep`` entries and/or the newest that fit in ``max_size`` bytes."""
    if keep is not None and keep < 0:
        raise UsageError(f"--keep {keep} is negative", "pass the number of newest entries to keep")
    entries = summaries(cache)  # newest first, through the listing index
    sizes = {e.key: e.size for e in entries}
    kept: list[EntrySummary] = []
    removed: list[EntrySummary] = []
    total = 0
    for entry in entries:
        over_count = keep is not None and len(kept) >= keep
        over_size = max_size is not None and total + sizes[entry.key] > max_size
        if over_count or over_size:
            removed.append(entry)
        else:
            kept.append(entry)
            total += sizes[entry.key]
    if not dry_run:
        for entry in removed:
            cache.discard(entry.path)
    cleaned = 0 if dry_run else cache.clean_staging()
    return GcResult(tuple(removed), len(kept), sum(sizes[e.key] for e in removed), cleaned, sizes)
