"""Build facts as data: ``srcbuild/knowledge/data/build.toml`` (and ``build_deps.toml``).

The driver floors of CUDA minor-version compatibility, the newest PTX ISA each generation's last
driver can JIT-compile, the compute capabilities torch's ``supported_arches`` never lists, and the
torch releases that read each era-specific build variable, and the variables a build of another
package (torchaudio) sets in each of its eras. Each row carries its source; the file
is read once.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from srcbuild.capability import ComputeCapability
from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA_DIR = Path(__file__).resolve().parent / "data"
FILE = "build.toml"


@record
class PtxIsaLimit:
    cc_major: int
    generation: str
    driver_branch: int
    max_isa: tuple[int, int]
    max_isa_cuda: str  # the CUDA release of that ISA
    source: str


@record
class VariableEra:
    """torch releases ``since <= version < until`` read ``names``."""

    names: tuple[str, ...]
    since: Version | None
    until: Version | None
    source: str

    def reads(self, version: Version) -> bool:
        return (self.since is None or version >= self.since) and (self.until is None or version < self.until)


@record
class PackageVariable:
    """A variable a build of ``package`` releases ``since <= version < until`` sets, and why."""

    package: str
    name: str
    value: str
    since: Version | None
    until: Version | None
    why: str
    source: str

    def applies(self, package: str, version: Version) -> bool:
        return (
            package == self.package
            and (self.since is None or version >= self.since)
            and (self.until is None or version < self.until)
        )


@record
class BuildFacts:
    minor_compat_floor: dict[int, str]  # CUDA major -> oldest driver running its later minors
    minor_compat_source: str
    ptx_isa_limits: tuple[PtxIsaLimit, ...]
    unlisted_arches: tuple[ComputeCapability, ...]
    unlisted_source: str
    variable_eras: tuple[VariableEra, ...]
    package_variables: tuple[PackageVariable, ...] = ()

    def variables_of(self, package: str, version: Version) -> tuple[PackageVariable, ...]:
        """The ``[[package_variable]]`` rows a build of ``package`` at ``version`` sets."""
        return tuple(row for row in self.package_variables if row.applies(package, version))

    def ptx_isa_limit(self, cc: ComputeCapability) -> PtxIsaLimit | None:
        return next((row for row in self.ptx_isa_limits if row.cc_major == cc.major), None)

    def reads_variable(self, name: str, version: Version) -> bool:
        """Whether torch ``version``'s setup.py reads ``name`` (True for a variable of every era)."""
        eras = [era for era in self.variable_eras if name in era.names]
        return not eras or any(era.reads(version) for era in eras)


def _rows(data: dict[str, Any], table: str, path: Path) -> list[dict[str, Any]]:
    rows = data.get(table, [])
    for n, row in enumerate(rows, 1):
        if not row.get("source"):
            raise ValueError(f"{path}: [[{table}]] row {n} has no source")
    return list(rows)


@lru_cache(maxsize=4)
def load_build_facts(data_dir: Path | None = None) -> BuildFacts:
    """The build facts of ``data_dir`` (the shipped data by default), read once."""
    path = (data_dir or DATA_DIR) / FILE
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    compat = _rows(data, "minor_compat", path)
    unlisted = _rows(data, "unlisted_arch", path)
    return BuildFacts(
        minor_compat_floor={int(r["cuda_major"]): str(r["driver_floor"]) for r in compat},
        minor_compat_source="; ".join(sorted({str(r["source"]) for r in compat})),
        ptx_isa_limits=tuple(
            PtxIsaLimit(
                int(r["cc_major"]),
                str(r["generation"]),
                int(r["driver_branch"]),
                (int(r["max_isa"].split(".")[0]), int(r["max_isa"].split(".")[1])),
                str(r["max_isa_cuda"]),
                str(r["source"]),
            )
            for r in _rows(data, "ptx_isa_limit", path)
        ),
        unlisted_arches=tuple(ComputeCapability.parse(str(r["arch"])) for r in unlisted),
        unlisted_source="; ".join(dict.fromkeys(str(r["source"]) for r in unlisted)),
        variable_eras=tuple(
            VariableEra(
                tuple(r["names"]),
                Version(r["since"]) if "since" in r else None,
                Version(r["until"]) if "until" in r else None,
                str(r["source"]),
            )
            for r in _rows(data, "variable_era", path)
        ),
        package_variables=tuple(
            PackageVariable(
                str(r["package"]),
                str(r["name"]),
                str(r["value"]),
                Version(r["since"]) if "since" in r else None,
                Version(r["until"]) if "until" in r else None,
                str(r["why"]),
                str(r["source"]),
            )
            for r in _rows(data, "package_variable", path)
        ),
    )
