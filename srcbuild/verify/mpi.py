"""MPI facts for verification: which MPI versions a ``libmpi.so.N`` soname stands for, and the host's MPI.

The soname table is data, one row per fact with its source. The host probe asks ``ompi_info``
or ``mpirun`` through ``srcbuild.proc.probe``; parsing its answer is pure.
"""

from __future__ import annotations

from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild import proc
from srcbuild.host.parsers import parse_mpi_version as parse_version_output
from srcbuild.records import record


@record
class MpiAbi:
    """Releases of one MPI implementation that ship ``libmpi.so.<abi>``."""

    implementation: str
    abi: int
    versions: str  # a PEP 440 specifier over the release versions
    label: str  # how to say it to a user
    source: str


# Open MPI versions its libraries with libtool current:revision:age (VERSION file,
# libmpi_so_version); the soname number is current - age.
MPI_ABIS: tuple[MpiAbi, ...] = (
    MpiAbi(
        "openmpi",
        40,
        ">=3.0,<6",
        "Open MPI 3.x/4.x/5.x",
        "open-mpi/ompi VERSION: v3.0 libmpi_so_version=40:0:0, v3.1 50:0:10 (open-mpi/ompi#4838, "
        "'bumping the current number by 10 and setting the age to v3.0.0 age + 10'); Debian libopenmpi3 "
        "4.1.4 ships libmpi.so.40.30.4 and libopenmpi40 5.0.x ships libmpi.so.40.40.7",
    ),
    MpiAbi(
        "openmpi",
        20,
        ">=2.0,<3",
        "Open MPI 2.x",
        "open-mpi/ompi VERSION v2.0.x libmpi_so_version=20:0:0; Ubuntu 18.04 libopenmpi2 (2.1.1) ships libmpi.so.20",
    ),
    MpiAbi(
        "mpich",
        12,
        ">=3.1",
        "MPICH 3.1 or newer (MPICH ABI)",
        "MPICH ABI Compatibility Initiative, https://www.mpich.org/abi/ (libmpi.so.12 since MPICH 3.1)",
    ),
    MpiAbi(
        "mvapich2",
        12,
        ">=2.0",
        "MVAPICH2 2.0 or newer (MPICH ABI)",
        "MPICH ABI Compatibility Initiative, https://www.mpich.org/abi/",
    ),
    MpiAbi(
        "intel-mpi",
        12,
        ">=5.0",
        "Intel MPI 5.0 or newer (MPICH ABI)",
        "MPICH ABI Compatibility Initiative, https://www.mpich.org/abi/",
    ),
)


def abis_for(implementation: str, abi: int) -> list[MpiAbi]:
    return [row for row in MPI_ABIS if row.implementation == implementation and row.abi == abi]


def expected_abi(implementation: str, version: Optional[str]) -> Optional[MpiAbi]:
    """The table row whose versions include ``version`` of ``implementation``, if any."""
    if version is None:
        return None
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    for row in MPI_ABIS:
        if row.implementation == implementation and v in SpecifierSet(row.versions):
            return row
    return None


def describe_abi(abi: int) -> str:
    """What ``libmpi.so.<abi>`` is, in words: "Open MPI 3.x/4.x/5.x" (or "an unknown MPI")."""
    labels = list(dict.fromkeys(row.label for row in MPI_ABIS if row.abi == abi))
    return " or ".join(labels) if labels else "an MPI this table does not know"


def version_matches(wanted: str, found: str) -> bool:
    """``"4.1"`` matches ``"4.1.4"``; ``"4.0"`` does not. Compares the components ``wanted`` names."""
    want = wanted.split(".")
    return found.split(".")[: len(want)] == want


@record
class HostMpi:
    """The MPI the build host has on PATH."""

    implementation: str
    version: str
    tool: str  # the command that said so


def parse_mpi_version(text: str, tool: str) -> Optional[HostMpi]:
    """Read ``ompi_info --version`` / ``mpirun --version`` output (Open MPI, MPICH, Intel MPI)."""
    parsed = parse_version_output(text)
    return HostMpi(parsed[0], parsed[1], tool) if parsed else None


def probe_host_mpi() -> Optional[HostMpi]:
    """The host's MPI, from ``ompi_info --version`` or ``mpirun --version``; None when neither answers."""
    for argv in (("ompi_info", "--version"), ("mpirun", "--version")):
        out = proc.probe(argv)
        if out:
            found = parse_mpi_version(out, " ".join(argv))
            if found:
                return found
    return None
