"""What each step's handler found or made, as typed frozen records, and the store later steps read.

A handler returns a ``Record``; the executor keeps it in ``Records`` (one per record type: a later
step asks for the type it needs, never for another step by its id) and writes it into the step's
entry of the state file, so a ``--resume`` that skips a step done in an earlier run reads what
that step found from the state file instead of measuring it again. Every record type has a
``kind`` (its name in the state file) and round-trips through ``to_json``/``from_json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from srcbuild.compiler_cache.model import CacheStats
from srcbuild.records import record
from srcbuild.sources.localdiff import LocalChanges

R = TypeVar("R", bound="Record")

_KINDS: dict[str, type[Record]] = {}


class Record:
    """The base of every step record; subclasses are frozen dataclasses with a unique ``kind``."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            assert cls.kind not in _KINDS, f"two step records are called {cls.kind}"
            _KINDS[cls.kind] = cls

    def fields(self) -> dict[str, Any]:
        """The record's values as JSON values (``from_fields`` reads them back)."""
        return {}

    @classmethod
    def from_fields(cls: type[R], data: Mapping[str, Any]) -> R:
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.fields()}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Record | None:
        """The record ``data`` holds; None when its kind is unknown or a value does not read back
        (a state file written by another version: the step then counts as not done)."""
        kind = _KINDS.get(str(data.get("kind", "")))
        if kind is None:
            return None
        try:
            return kind.from_fields(data)
        except (KeyError, TypeError, ValueError):
            return None


@record
class Done(Record):
    """A step that measured nothing later steps read (its work is on disk or on the screen)."""

    kind: ClassVar[str] = "done"


@record
class PreflightPassed(Record):
    kind: ClassVar[str] = "preflight"
    ignored_errors: int = 0  # --ignore-preflight went on despite this many errors

    def fields(self) -> dict[str, Any]:
        return {"ignored_errors": self.ignored_errors}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> PreflightPassed:
        return cls(int(data["ignored_errors"]))


@record
class TorchBuilt(Record):
    """The recipe's torch wheel, from torch's own pipeline (a cache hit or a build), which runs
    before the torch-wheel step of a package built against it (``srcbuild.pipeline``)."""

    kind: ClassVar[str] = "torch-built"
    wheel: Path
    sha256: str = ""  # what the wheel's cache entry records: the torch-wheel step checks its copy
    entry: str = ""  # the cache entry's key

    def fields(self) -> dict[str, Any]:
        return {"wheel": str(self.wheel), "sha256": self.sha256, "entry": self.entry}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> TorchBuilt:
        return cls(Path(data["wheel"]), str(data.get("sha256") or ""), str(data.get("entry") or ""))


@record
class TorchWheelCopied(Record):
    """The recipe's torch wheel (from torch's pipeline) and the copy the build of a package built
    against it (torchvision, torchaudio) installs."""

    kind: ClassVar[str] = "torch-wheel"
    wheel: Path
    copy: Path

    def fields(self) -> dict[str, Any]:
        return {"wheel": str(self.wheel), "copy": str(self.copy)}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> TorchWheelCopied:
        return cls(Path(data["wheel"]), Path(data["copy"]))


@record
class SourcesChecked(Record):
    """The checkout's commit and each submodule's, measured before the build (the manifest's)."""

    kind: ClassVar[str] = "sources-checked"
    commit: str
    submodules: tuple[tuple[str, str], ...]  # (path, commit), sorted

    def fields(self) -> dict[str, Any]:
        return {"commit": self.commit, "submodules": dict(self.submodules)}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> SourcesChecked:
        submodules = data["submodules"]
        if not isinstance(submodules, dict):
            raise ValueError("submodules is not a mapping")
        return cls(str(data["commit"]), tuple(sorted((str(k), str(v)) for k, v in submodules.items())))


@record
class LocalChangesFound(Record):
    """The files that differ from the tag plus the recipe's patches, found before the build."""

    kind: ClassVar[str] = "local-changes"
    changes: LocalChanges

    def fields(self) -> dict[str, Any]:
        return {"changes": self.changes.to_json()}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> LocalChangesFound:
        return cls(LocalChanges.from_json(data["changes"]))


@record
class CompilerCacheStarted(Record):
    """The compiler cache's counters when the build started: the result reports the difference."""

    kind: ClassVar[str] = "compiler-cache-started"
    before: CacheStats

    def fields(self) -> dict[str, Any]:
        return {"before": self.before.to_json()}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> CompilerCacheStarted:
        b = data["before"]
        return cls(
            CacheStats(
                str(b["kind"]),
                int(b["hits"]),
                int(b["misses"]),
                int(b["requests"]),
                int(b["distributed"]),
                str(b["location"]),
            )
        )


@record
class CompilerCacheCounted(Record):
    """This build's hits and misses of the compiler cache."""

    kind: ClassVar[str] = "compiler-cache-counted"
    stats: CacheStats

    def fields(self) -> dict[str, Any]:
        return {"stats": self.stats.to_json()}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> CompilerCacheCounted:
        started = CompilerCacheStarted.from_fields({"before": data["stats"]})
        return cls(started.before)


@record
class WheelVerified(Record):
    """The built wheel and the kernels it holds (the manifest records them)."""

    kind: ClassVar[str] = "wheel-verified"
    wheel: Path
    sass: tuple[int, ...]  # the SM numbers with SASS (35: sm_35)
    ptx: tuple[int, ...]

    def fields(self) -> dict[str, Any]:
        return {"wheel": str(self.wheel), "sass": list(self.sass), "ptx": list(self.ptx)}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> WheelVerified:
        return cls(Path(data["wheel"]), tuple(map(int, data["sass"])), tuple(map(int, data["ptx"])))


@record
class WheelStored(Record):
    """The wheel as the cache holds it."""

    kind: ClassVar[str] = "wheel-stored"
    wheel: Path

    def fields(self) -> dict[str, Any]:
        return {"wheel": str(self.wheel)}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> WheelStored:
        return cls(Path(data["wheel"]))


@record
class CanaryChecked(Record):
    """What the canary read back and compiled, and what it cost (or why it was skipped)."""

    kind: ClassVar[str] = "canary"
    skipped: str = ""  # why it did nothing ("--no-canary"), else ""
    wall: float = 0.0  # seconds
    cpu: float = 0.0  # user + system seconds of everything it ran
    readout: tuple[dict[str, Any], ...] = ()  # each expectation: plan, CMake, where, ok
    units: tuple[dict[str, Any], ...] = ()  # each unit: target, object, sass, ptx

    def fields(self) -> dict[str, Any]:
        return {"skipped": self.skipped, "wall": round(self.wall, 3), "cpu": round(self.cpu, 3),
                "readout": list(self.readout), "units": list(self.units)}

    @classmethod
    def from_fields(cls, data: Mapping[str, Any]) -> CanaryChecked:
        return cls(str(data["skipped"]), float(data["wall"]), float(data["cpu"]),
                   tuple(dict(r) for r in data["readout"]), tuple(dict(u) for u in data["units"]))


class Records:
    """The records of the steps run so far (or done in the run being resumed), one per type."""

    def __init__(self) -> None:
        self._by_type: dict[type[Record], Record] = {}

    def add(self, record: Record) -> None:
        self._by_type[type(record)] = record

    def get(self, kind: type[R]) -> R | None:
        found = self._by_type.get(kind)
        return found if isinstance(found, kind) else None
