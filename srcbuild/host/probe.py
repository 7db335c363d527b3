"""``probe_host``: every probe of the machine, gathered into one frozen ``HostFacts``.

Imported by the commands that probe (doctor, a build's preflight, ``toolchain``), never by one that
only needs a leaf of this package (``host.platform`` for the cache key's platform tag).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from srcbuild import proc
from srcbuild.host.facts import (
    DriverInfo,
    GpuInfo,
    HostFacts,
)
from srcbuild.host.gpu import probe_gpus
from srcbuild.host.locate import Runner, which_in
from srcbuild.host.mpi import list_mpi
from srcbuild.host.system import conda_env_dirs, find_conda, probe_docker, probe_resources
from srcbuild.host.toolchain import CONTRACT_VAR, find_cudnn, find_nccl, list_cuda, list_gcc
from srcbuild.paths import Paths
from srcbuild.toolchain.homes import ProvisionedDirs, provisioned_dirs

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
) -> HostFacts:
    """Probe this machine (or the fixture tree at ``root`` with ``environ``); never raises.

    ``toolchain_only`` (a build's preflight) skips what a build does not use: the GPUs and driver
    (the wheel is often for another machine) and docker.
    """
    env = dict(environ)
    which = which_in(env)
    missing: list[str] = []
    gpus: list[GpuInfo] = []
    driver: DriverInfo | None = None
    if not toolchain_only:
        gpus, driver, gpu_missing = _guarded("GPU", lambda: probe_gpus(root, run, which), missing) or ([], None, [])
        missing.extend(gpu_missing)
    paths = Paths.resolve(work_dir=work_dir, environ=env)
    conda = _guarded("conda", lambda: find_conda(env, root, which), missing) or []
    homes = _guarded("conda envs", lambda: conda_env_dirs(conda, paths.envs_dir), missing) or []
    provisioned = _guarded("provisioned toolchains", lambda: provisioned_dirs(paths.toolchain_dir), missing)
    provisioned = provisioned or ProvisionedDirs()
    toolkits = _guarded("CUDA", lambda: list_cuda(env, root, run, [*homes, *provisioned.cuda_homes]), missing) or []
    if not toolkits:
        missing.append("nvcc: no CUDA toolkit found (CUDA_HOME, /usr/local/cuda*, conda envs, PATH)")
    gccs = _guarded("gcc", lambda: list_gcc(env, root, run, provisioned.gcc_bins), missing) or []
    if not gccs:
        missing.append("gcc: not found")
    mpi = _guarded("MPI", lambda: list_mpi(env, root, run, provisioned.mpi_bins), missing) or []
    if not mpi:
        missing.append("MPI: no mpicc or mpirun found")
    if not conda:
        missing.append("conda/mamba/micromamba: not found (srcbuild can create environments without them)")
    docker = None
    if not toolchain_only:
        docker = _guarded("docker", lambda: probe_docker(which, run), missing)
        if docker is None:
            missing.append("docker: not found")
        elif docker.runtimes is None:
            missing.append("docker: the daemon did not answer `docker info`")
    return HostFacts(
        gpus=tuple(gpus),
        driver=driver,
        cuda_toolkits=tuple(toolkits),
        cudnn=tuple(_guarded("cuDNN", lambda: find_cudnn(env, root, toolkits, provisioned.cudnn), missing) or []),
        nccl=tuple(_guarded("NCCL", lambda: find_nccl(env, root, toolkits, provisioned.nccl), missing) or []),
        gccs=tuple(gccs),
        mpi=tuple(mpi),
        conda=tuple(conda),
        docker=docker,
        resources=_guarded("resources", lambda: probe_resources(paths.work_dir, root), missing),
        missing=tuple(missing),
        cuda_contract="warn" if env.get(CONTRACT_VAR, "").strip().lower() == "warn" else "error",
    )
