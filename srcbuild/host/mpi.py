"""MPI implementations on this machine, named and versioned by their own wrappers.

Open MPI answers ``mpicc --showme:version`` ("mpicc: Open MPI 4.1.4 (Language: C)"); MPICH ships
``mpichversion`` ("MPICH Version:      4.0"); both answer ``mpirun --version`` ("mpirun (Open MPI)
4.1.4", "HYDRA build details: ... Version: 4.0", "Intel(R) MPI Library for Linux* OS, Version
2021.6"). Wrappers are looked for on ``PATH``, under ``MPI_HOME`` and in the distro's private
directories (Fedora/RHEL ``/usr/lib64/openmpi/bin``, ``/usr/lib64/mpich/bin``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from srcbuild import proc
from srcbuild.host.facts import MpiInstall
from srcbuild.host.locate import Runner, is_executable, path_dirs, under, unique_paths
from srcbuild.host.parsers import parse_mpi_version

MPI_DIRS = ("/usr/lib64/openmpi/bin", "/usr/lib64/mpich/bin", "/opt/openmpi/bin", "/opt/mpich/bin")

def _bin_dirs(environ: Mapping[str, str], root: Path, extra_dirs: Sequence[Path] = ()) -> list[Path]:
    dirs = path_dirs(environ)
    for var in ("MPI_HOME", "MPI_ROOT", "I_MPI_ROOT"):
        if environ.get(var):
            dirs.append(Path(environ[var]) / "bin")
    dirs.extend(under(root, d) for d in MPI_DIRS)
    dirs.extend(extra_dirs)
    return unique_paths([d for d in dirs if d.is_dir()])


def list_mpi(
    environ: Mapping[str, str],
    root: Path = Path("/"),
    run: Runner = proc.probe,
    extra_dirs: Sequence[Path] = (),
) -> list[MpiInstall]:
    """One entry per MPI installation (per directory holding ``mpicc`` or ``mpirun``).

    ``extra_dirs`` are more ``bin`` directories to look in last (provisioned MPI prefixes).
    """
    found: list[MpiInstall] = []
    for directory in _bin_dirs(environ, root, extra_dirs):
        mpicc, mpicxx, mpirun = (directory / n for n in ("mpicc", "mpicxx", "mpirun"))
        queries = []
        if is_executable(mpicc):
            queries.append([str(mpicc), "--showme:version"])
        if is_executable(directory / "mpichversion"):
            queries.append([str(directory / "mpichversion")])
        if is_executable(mpirun):
            queries.append([str(mpirun), "--version"])
        for argv in queries:
            out = run(argv, timeout=10)
            parsed = parse_mpi_version(out) if out else None
            if parsed is None:
                continue
            implementation, version = parsed
            install = MpiInstall(
                implementation,
                version,
                mpicc if is_executable(mpicc) else None,
                mpicxx if is_executable(mpicxx) else None,
                " ".join([Path(argv[0]).name, *argv[1:]]),
            )
            if not any((m.implementation, m.version) == (implementation, version) for m in found):
                found.append(install)
            break
    return found
