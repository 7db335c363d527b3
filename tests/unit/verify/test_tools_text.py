"""Parsing what other tools print: cuobjdump listings and refusals, ompi_info / mpirun versions."""

from __future__ import annotations

from pathlib import Path

from srcbuild.verify.cuobjdump import compare, parse_listing
from srcbuild.verify.elfdeps import cudart_version, libmpi_abi
from srcbuild.verify.fatbin import FatbinEntry
from srcbuild.verify.mpi import HostMpi, describe_abi, expected_abi, parse_mpi_version, version_matches
from srcbuild.verify.report import verify_wheel
from tests.worlds.wheels import write_wheel

LISTING_118 = """ELF file    1: libk118.1.sm_35.cubin
ELF file    2: libk118.2.sm_37.cubin
ELF file    3: libk118.3.sm_50.cubin
PTX file    1: libk118.1.sm_50.ptx
"""
ENTRIES = [FatbinEntry("sass", 35), FatbinEntry("sass", 37), FatbinEntry("sass", 50), FatbinEntry("ptx", 50)]


def test_cuobjdump_listing() -> None:
    assert parse_listing(LISTING_118) == [("sass", 35), ("sass", 37), ("sass", 50), ("ptx", 50)]
    assert compare(LISTING_118, ENTRIES).status == "match"
    mismatch = compare(LISTING_118, ENTRIES[:2])
    assert mismatch.status == "mismatch"
    assert mismatch.message == "only cuobjdump lists [('ptx', 50), ('sass', 50)]; only the parser finds nothing"


def test_cuobjdump_refusals() -> None:
    text = "cuobjdump fatal   : Support for 'sm_35' has been removed. Please use CUDA toolkit 11.8 or earlier.\n"
    check = compare(text, ENTRIES)
    assert (check.status, check.message) == (
        "unsupported",
        "Support for 'sm_35' has been removed. Please use CUDA toolkit 11.8 or earlier.",
    )
    assert compare("cuobjdump fatal   : Could not open input file 'x.so'\n", ENTRIES).status == "failed"


def test_mpi_version_texts() -> None:
    assert parse_mpi_version("Open MPI v4.1.4\n\nhttp://www.open-mpi.org/community/help/\n", "ompi_info --version") == (
        HostMpi("openmpi", "4.1.4", "ompi_info --version")
    )
    assert parse_mpi_version("mpirun (Open MPI) 4.1.4\n", "mpirun --version") == HostMpi(
        "openmpi", "4.1.4", "mpirun --version"
    )
    hydra = "HYDRA build details:\n    Version:                                 4.0.2\n    Release Date: ...\n"
    assert parse_mpi_version(hydra, "mpirun --version") == HostMpi("mpich", "4.0.2", "mpirun --version")
    assert parse_mpi_version("something else", "x") is None


def test_mpi_abi_table() -> None:
    assert expected_abi("openmpi", "4.1").abi == 40  # type: ignore[union-attr]
    assert expected_abi("openmpi", "3.0").abi == 40  # type: ignore[union-attr]
    assert expected_abi("openmpi", "2.1").abi == 20  # type: ignore[union-attr]
    assert expected_abi("mpich", "4.1").abi == 12  # type: ignore[union-attr]
    assert expected_abi("openmpi", "1.10") is None
    assert describe_abi(12) == (
        "MPICH 3.1 or newer (MPICH ABI) or MVAPICH2 2.0 or newer (MPICH ABI) or Intel MPI 5.0 or newer (MPICH ABI)"
    )
    assert version_matches("4.1", "4.1.4") and version_matches("4", "4.0.3") and not version_matches("4.0", "4.1.4")


def test_sonames() -> None:
    assert cudart_version("libcudart.so.9.2") == (9, 2)
    assert cudart_version("libcudart.so.10.2") == (10, 2)
    assert cudart_version("libcudart.so.11.0") == (11, None)
    assert cudart_version("libcudart.so.13") == (13, None)
    assert cudart_version("libcudnn.so.8") is None
    assert libmpi_abi("libmpi.so.40") == 40 and libmpi_abi("libmpi.so") is None


def test_a_linker_script_named_so_is_a_warning(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path, "demo", "1.0", "py3-none-any", {"demo/libx.so": b"INPUT(libx.so.1)\n"})
    report = verify_wheel(wheel, None, [])
    assert report.ok
    [finding] = report.findings
    assert finding.rule == "library-unreadable"
    assert finding.message.startswith("demo/libx.so: not a readable ELF file (")
