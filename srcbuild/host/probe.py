"""``probe_host``: every probe of the machine, gathered into one frozen ``HostFacts``.

Imported by the commands that probe (doctor, a build's preflight, ``toolchain``), never by one that
only needs a leaf of this package (``host.platform`` for the cache key's platform tag).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from srcbuild import proc
from srcbuild.host.facts import DockerInfo, DriverInfo, GpuInfo, HostFacts, ProvisionedDirs
from srcbuild.host.gpu import probe_gpus
from srcbuild.host.locate import Runner, Which, which_in
from srcbuild.host.mpi import list_mpi
from srcbuild.host.system import conda_env_dirs, find_conda, probe_docker, probe_resources
from srcbuild.host.toolchain import CONTRACT_VAR, find_cudnn, find_nccl, list_cuda, list_gcc
from srcbuild.paths import Paths
from srcbuild.precedence import env_value

T = TypeVar("T")


def _guarded(what: str, probe: Callable[[], T], missing: list[str]) -> T | None:
    """Run one probe; an unreadable directory or a surprising output becomes a line, not a traceback."""
    try:
        return probe()
    except (OSError, ValueError, UnicodeError) as exc:
        missing.append(f"{what}: the probe failed ({type(exc).__name__}: {exc})")
        return None


def probe_host(
    environ: Mapping[str, str],
    root: Path = Path("/"),
    work_dir: Path | None = None,
    run: Runner = proc.probe,
    toolchain_only: bool = False,
    provisioned: Callable[[Path], ProvisionedDirs] | None = None,
) -> HostFacts:
    """Probe this machine (or the fixture tree at ``root`` with ``environ``); never raises.

    ``toolchain_only`` (a build's preflight) skips what a build does not use: the GPUs and driver
    (the wheel is often for another machine) and docker. ``provisioned`` reads the toolchain
    directory for more places to look (``srcbuild.toolchain.homes.provisioned_dirs``: the commands
    pass it, as the host package sits below the toolchain package).
    """
    env = dict(environ)
    which = which_in(env)
    paths = Paths.resolve(work_dir=work_dir, environ=env)
    # The probes mostly wait on programs (nvidia-smi, lspci, nvcc, gcc, mpicc, docker): the independent
    # ones run at the same time (proc.Background), each noting what it found missing in its own list;
    # the lists are joined below in one fixed order, so the report reads the same whatever ends first.
    early: list[str] = []
    read = provisioned or (lambda _dir: ProvisionedDirs())
    found = _guarded("provisioned toolchains", lambda: read(paths.toolchain_dir), early)
    extra = found or ProvisionedDirs()
    gpu_job = None if toolchain_only else proc.Background(lambda: _gpus(root, run, which))
    docker_job = None if toolchain_only else proc.Background(lambda: _docker(which, run, env, root))
    gcc_job = proc.Background(
        lambda: _listed("gcc", lambda: list_gcc(env, root, run, extra.gcc_bins), "gcc: not found")
    )
    mpi_job = proc.Background(
        lambda: _listed("MPI", lambda: list_mpi(env, root, run, extra.mpi_bins), "MPI: no mpicc or mpirun found")
    )
    cuda_missing: list[str] = []
    conda = _guarded("conda", lambda: find_conda(env, root, which), cuda_missing) or []
    homes = _guarded("conda envs", lambda: conda_env_dirs(conda, paths.envs_dir), cuda_missing) or []
    cuda_missing.extend(early)
    toolkits = (
        _guarded("CUDA", lambda: list_cuda(env, root, run, [*homes, *extra.cuda_homes]), cuda_missing) or []
    )
    if not toolkits:
        cuda_missing.append("nvcc: no CUDA toolkit found (CUDA_HOME, /usr/local/cuda*, conda envs, PATH)")
    late: list[str] = []
    cudnn = tuple(_guarded("cuDNN", lambda: find_cudnn(env, root, toolkits, extra.cudnn), late) or [])
    nccl = tuple(_guarded("NCCL", lambda: find_nccl(env, root, toolkits, extra.nccl), late) or [])
    resources = _guarded("resources", lambda: probe_resources(paths.work_dir, root), late)
    gpus, driver, gpu_missing = gpu_job.result() if gpu_job is not None else ([], None, [])
    gccs, gcc_missing = gcc_job.result()
    mpi, mpi_missing = mpi_job.result()
    docker, docker_missing = docker_job.result() if docker_job is not None else (None, [])
    missing = [*gpu_missing, *cuda_missing, *gcc_missing, *mpi_missing]
    if not conda:
        missing.append("conda/mamba/micromamba: not found (srcbuild can create environments without them)")
    missing.extend([*docker_missing, *late])
    return HostFacts(
        gpus=tuple(gpus),
        driver=driver,
        cuda_toolkits=tuple(toolkits),
        cudnn=cudnn,
        nccl=nccl,
        gccs=tuple(gccs),
        mpi=tuple(mpi),
        conda=tuple(conda),
        docker=docker,
        resources=resources,
        missing=tuple(missing),
        cuda_contract="warn" if (env_value(env, CONTRACT_VAR) or "").strip().lower() == "warn" else "error",
    )


def _gpus(root: Path, run: Runner, which: Which) -> tuple[list[GpuInfo], DriverInfo | None, list[str]]:
    missing: list[str] = []
    gpus, driver, gpu_missing = _guarded("GPU", lambda: probe_gpus(root, run, which), missing) or ([], None, [])
    return list(gpus), driver, [*missing, *gpu_missing]


def _listed(what: str, probe: Callable[[], list[T]], none_found: str) -> tuple[list[T], list[str]]:
    """A probe that lists installations (gcc, MPI) and what is missing: a failure, or none found."""
    missing: list[str] = []
    found = _guarded(what, probe, missing) or []
    if not found:
        missing.append(none_found)
    return found, missing


def _docker(
    which: Which, run: Runner, environ: Mapping[str, str], root: Path
) -> tuple[DockerInfo | None, list[str]]:
    missing: list[str] = []
    docker = _guarded("docker", lambda: probe_docker(which, run, environ, root), missing)
    if docker is None:
        missing.append("docker: not found")
    elif docker.runtimes is None:
        missing.append(f"docker: {docker.unreachable or 'the daemon did not answer `docker info`'}")
    return docker, missing
