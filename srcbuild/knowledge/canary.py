"""How each torch era configures without compiling, and its canary translation units (data).

``srcbuild/knowledge/data/canary.toml`` holds one row per torch era: the ``setup.py`` arguments
that run CMake only, the build tree it writes, and the units compiled first through torch's own
ninja targets. ``era_for("v1.13.1")`` gives the row of a tag, or None for an era without one.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE = Path(__file__).resolve().parent / "data" / "canary.toml"


@record
class CanaryUnit:
    """One translation unit the canary compiles."""

    outputs: tuple[str, ...]  # ninja output path suffixes, in order of preference
    device: bool  # it must hold device code for every recipe arch
    when: str  # "cuda", "mpi" or "" (always)
    why: str

    def to_json(self) -> dict[str, object]:
        return {"outputs": list(self.outputs), "device": self.device, "when": self.when, "why": self.why}


@record
class CanaryEra:
    torch: str  # a specifier on the torch release
    configure: tuple[str, ...]  # setup.py arguments that run CMake only
    reconfigure: tuple[str, ...]  # the same, forcing CMake to run again in an existing tree
    build_dir: str
    units: tuple[CanaryUnit, ...]
    source: str


@lru_cache(maxsize=1)
def load_eras() -> tuple[CanaryEra, ...]:
    data = tomllib.loads(FILE.read_text(encoding="utf-8"))
    return tuple(
        CanaryEra(
            torch=str(row["torch"]),
            configure=tuple(str(a) for a in row["configure"]),
            reconfigure=tuple(str(a) for a in row.get("reconfigure", row["configure"])),
            build_dir=str(row.get("build_dir", "build")),
            units=tuple(
                CanaryUnit(
                    outputs=tuple(str(o) for o in unit["outputs"]),
                    device=bool(unit.get("device", False)),
                    when=str(unit.get("when", "")),
                    why=str(unit.get("why", "")),
                )
                for unit in row.get("unit", ())
            ),
            source=str(row.get("source", "")),
        )
        for row in data.get("era", [])
    )


def era_for(tag: str) -> CanaryEra | None:
    """The canary row of the torch release ``tag`` ("v1.13.1"), or None (no row, or no release)."""
    try:
        version = Version(tag.lstrip("v"))
    except InvalidVersion:
        return None
    for era in load_eras():
        try:
            if version in SpecifierSet(era.torch):
                return era
        except InvalidSpecifier:
            continue
    return None
