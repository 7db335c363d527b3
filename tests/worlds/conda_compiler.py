"""conda-forge-style compiler packages built around this machine's gcc-11, for a local channel.

``host_gcc_packages()`` returns ``gcc_linux-64`` and ``gxx_linux-64`` at the host gcc-11's version,
laid out like conda-forge's: the drivers are ``bin/x86_64-conda-linux-gnu-gcc``/``-g++`` (copies of
the host's gcc-11 and g++-11 binaries), the compiler proper sits in ``lib/gcc/x86_64-linux-gnu/11/``
(links to the host's cc1, cc1plus, crt files ...), the assembler and linker in
``x86_64-linux-gnu/bin/`` and the C++ headers in ``include/c++/11``: everything the driver looks up
relative to its own location, so it works from any prefix without gcc-11 on PATH.

``host_gcc_packages(sysroot=True)`` makes the compiler behave as conda-forge's does: that gcc is
configured ``--with-sysroot=$PREFIX/x86_64-conda-linux-gnu/sysroot`` (ctng-compilers-feedstock,
recipe/build.sh); the host's gcc-11 was configured for ``/``, so the package adds a ``specs`` file
whose ``self_spec`` passes ``--sysroot`` to that directory (the prefix placeholder is rewritten at
install, like conda-forge's own ``conda.specs``). ``standin_sysroot_package()`` is a
``sysroot_linux-64 2.17`` package built from THIS MACHINE's glibc: a STAND-IN. No real glibc 2.17
sysroot can be fetched here (no conda channel is reachable), so its ``usr``, ``lib`` and ``lib64``
link to the host's, in the layout of conda-forge's linux-sysroot-feedstock (recipe/build-sysroot.sh).
Builds with it use the machine's glibc under the 2.17 name; what they show is that the compiler
builds through the sysroot of its prefix and that the wheel is measured, not that glibc 2.17 is old.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild import proc
from tests.worlds.conda_channel import PREFIX_PLACEHOLDER, FakePackage

GCC_LIB = Path("/usr/lib/gcc/x86_64-linux-gnu/11")
TRIPLET = "x86_64-conda-linux-gnu"


def host_gcc_version() -> str | None:
    out = proc.probe(["gcc-11", "-dumpfullversion"])
    return out.strip() if out else None


SYSROOT = f"{TRIPLET}/sysroot"


def host_gcc_packages(sysroot: bool = False) -> list[FakePackage]:
    version = host_gcc_version()
    assert version is not None
    links = {f"lib/gcc/x86_64-linux-gnu/11/{p.name}": str(p) for p in sorted(GCC_LIB.iterdir())}
    links["x86_64-linux-gnu/bin/as"] = "/usr/bin/as"
    links["x86_64-linux-gnu/bin/ld"] = "/usr/bin/ld"
    files = {f"bin/{TRIPLET}-gcc": Path("/usr/bin/x86_64-linux-gnu-gcc-11").read_bytes()}
    if sysroot:  # as if configured --with-sysroot into its own prefix (see the module docstring)
        files["lib/gcc/x86_64-linux-gnu/11/specs"] = (
            f"*self_spec:\n+ --sysroot={PREFIX_PLACEHOLDER}/{SYSROOT}\n\n".encode()
        )
    gcc = FakePackage(
        "gcc_linux-64",
        version,
        depends=("sysroot_linux-64",) if sysroot else (),
        files=files,
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


def standin_sysroot_package(glibc: str = "2.17") -> FakePackage:
    """``sysroot_linux-64 {glibc}`` made of links to this machine's C library: a STAND-IN (see the
    module docstring), laid out like conda-forge's."""
    return FakePackage(
        "sysroot_linux-64",
        glibc,
        noarch=True,
        symlinks={f"{SYSROOT}/usr": "/usr", f"{SYSROOT}/lib": "/usr/lib", f"{SYSROOT}/lib64": "/usr/lib64"},
    )


def host_openmpi_package() -> FakePackage:
    """``openmpi`` at the host's Open MPI version: ``bin/mpicc``/``mpicxx`` are copies of its
    ``opal_wrapper`` (which answers ``--showme:version`` and compiles with the host's MPI)."""
    out = proc.probe(["mpicc", "--showme:version"]) or ""
    version = out.split("Open MPI ")[1].split()[0]
    wrapper = Path("/usr/bin/opal_wrapper").read_bytes()
    return FakePackage("openmpi", version, files={"bin/mpicc": wrapper, "bin/mpicxx": wrapper})
