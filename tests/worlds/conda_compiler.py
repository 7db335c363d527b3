"""conda-forge-style compiler packages built around this machine's gcc-11, for a local channel.

``host_gcc_packages()`` returns ``gcc_linux-64`` and ``gxx_linux-64`` at the host gcc-11's version,
laid out like conda-forge's: the drivers are ``bin/x86_64-conda-linux-gnu-gcc``/``-g++`` (copies of
the host's gcc-11 and g++-11 binaries), the compiler proper sits in ``lib/gcc/x86_64-linux-gnu/11/``
(links to the host's cc1, cc1plus, crt files ...), the assembler and linker in
``x86_64-linux-gnu/bin/`` and the C++ headers in ``include/c++/11``: everything the driver looks up
relative to its own location, so it works from any prefix without gcc-11 on PATH.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild import proc
from tests.worlds.conda_channel import FakePackage

GCC_LIB = Path("/usr/lib/gcc/x86_64-linux-gnu/11")
TRIPLET = "x86_64-conda-linux-gnu"


def host_gcc_version() -> str | None:
    out = proc.probe(["gcc-11", "-dumpfullversion"])
    return out.strip() if out else None


def host_gcc_packages() -> list[FakePackage]:
    version = host_gcc_version()
    assert version is not None
    links = {f"lib/gcc/x86_64-linux-gnu/11/{p.name}": str(p) for p in sorted(GCC_LIB.iterdir())}
    links["x86_64-linux-gnu/bin/as"] = "/usr/bin/as"
    links["x86_64-linux-gnu/bin/ld"] = "/usr/bin/ld"
    gcc = FakePackage(
        "gcc_linux-64",
        version,
        files={f"bin/{TRIPLET}-gcc": Path("/usr/bin/x86_64-linux-gnu-gcc-11").read_bytes()},
        symlinks=links,
    )
    gxx = FakePackage(
        "gxx_linux-64",
        version,
        depends=(f"gcc_linux-64 {version}",),
        files={f"bin/{TRIPLET}-g++": Path("/usr/bin/x86_64-linux-gnu-g++-11").read_bytes()},
        symlinks={
            "include/c++/11": "/usr/include/c++/11",
            "include/x86_64-linux-gnu/c++/11": "/usr/include/x86_64-linux-gnu/c++/11",
        },
    )
    return [gcc, gxx]


def host_openmpi_package() -> FakePackage:
    """``openmpi`` at the host's Open MPI version: ``bin/mpicc``/``mpicxx`` are copies of its
    ``opal_wrapper`` (which answers ``--showme:version`` and compiles with the host's MPI)."""
    out = proc.probe(["mpicc", "--showme:version"]) or ""
    version = out.split("Open MPI ")[1].split()[0]
    wrapper = Path("/usr/bin/opal_wrapper").read_bytes()
    return FakePackage("openmpi", version, files={"bin/mpicc": wrapper, "bin/mpicxx": wrapper})
