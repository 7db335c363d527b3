"""Know the machine: GPUs, driver, CUDA toolkits, cuDNN, NCCL, gcc, MPI, conda, docker, resources.

``probe_host()`` returns a frozen ``HostFacts`` in well under a second on a machine without a GPU.
It never raises: what it cannot find or ask becomes a line in ``HostFacts.missing``. Every probe
runs programs through ``srcbuild.proc.probe`` and reads files below ``root`` with the PATH and
variables of ``environ``, so tests can point it at a fixture tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from srcbuild import proc
from srcbuild.host.facts import (
    CudaToolkit,
    DockerInfo,
    DriverInfo,
    GccInstall,
    GpuInfo,
    HeaderVersion,
    HostFacts,
    MpiInstall,
    Resources,
)
from srcbuild.host.gpu import probe_gpus
from srcbuild.host.locate import Runner, which_in
from srcbuild.host.mpi import list_mpi
from srcbuild.host.system import conda_env_dirs, find_conda, probe_docker, probe_resources
from srcbuild.host.toolchain import find_cudnn, find_nccl, list_cuda, list_gcc
from srcbuild.paths import Paths

__all__ = [
    "CudaToolkit",
    "DockerInfo",
    "DriverInfo",
    "GccInstall",
    "GpuInfo",
    "HeaderVersion",
    "HostFacts",
    "MpiInstall",
    "Resources",
    "probe_host",
]


def probe_host(
    environ: Mapping[str, str] | None = None,
    root: Path = Path("/"),
    work_dir: Path | None = None,
    run: Runner = proc.probe,
) -> HostFacts:
    """Probe this machine (or the fixture tree at ``root`` with ``environ``); never raises."""
    env = dict(os.environ if environ is None else environ)
    which = which_in(env)
    missing: list[str] = []
    gpus, driver, gpu_missing = probe_gpus(root, run, which)
    missing.extend(gpu_missing)
    paths = Paths.resolve(work_dir=work_dir, environ=env)
    work_dir = paths.work_dir
    conda = find_conda(env, root, which)
    toolkits = list_cuda(env, root, run, conda_env_dirs(conda, paths.envs_dir))
    if not toolkits:
        missing.append("nvcc: no CUDA toolkit found (CUDA_HOME, /usr/local/cuda*, conda envs, PATH)")
    gccs = list_gcc(env, root, run)
    if not gccs:
        missing.append("gcc: not found")
    mpi = list_mpi(env, root, run)
    if not mpi:
        missing.append("MPI: no mpicc or mpirun found")
    if not conda:
        missing.append("conda/mamba/micromamba: not found (srcbuild can create environments without them)")
    docker = probe_docker(which, run)
    if docker is None:
        missing.append("docker: not found")
    elif docker.runtimes is None:
        missing.append("docker: the daemon did not answer `docker info`")
    return HostFacts(
        gpus=tuple(gpus),
        driver=driver,
        cuda_toolkits=tuple(toolkits),
        cudnn=tuple(find_cudnn(env, root, toolkits)),
        nccl=tuple(find_nccl(env, root, toolkits)),
        gccs=tuple(gccs),
        mpi=tuple(mpi),
        conda=tuple(conda),
        docker=docker,
        resources=probe_resources(work_dir, root),
        missing=tuple(missing),
    )
