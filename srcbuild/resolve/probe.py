"""The host facts a build is resolved from: ``probe_build_host`` probes this machine once.

This is the one place of the resolve stage that looks at the machine: it runs the host probe
(``srcbuild.host.probe_host``: nvcc, gcc, MPI, cuDNN headers, memory, disk), looks up ccache, the
recipe's Python, update-alternatives and the conda-family tools on PATH, and asks whether
py-rattler imports. It reads the settings decided before it (``srcbuild.resolve.decide``): the CUDA
home it looks at, and whether the build names an sccache-dist scheduler its compiler cache can use,
which it then asks for its build servers and CPUs (``sccache --dist-status``): resolve makes that
``MAX_JOBS``. ``build_host`` turns the probe's answer into ``BuildHost`` and is pure apart from the
PATH lookups. What the host lacks becomes planned provisioning afterwards
(``srcbuild.resolve.provisioning``).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve.decide import Decided
from srcbuild.resolve.inputs import BuildHost, DistCluster

if TYPE_CHECKING:
    from srcbuild.host.facts import HostFacts


def build_host(recipe: Recipe, facts: HostFacts, environ: Mapping[str, str]) -> BuildHost:
    """The host facts a build uses, taken from ``srcbuild.host.probe_host``'s answer."""
    import sys

    from srcbuild.envs.backends import conda_tools_on_path
    from srcbuild.envs.backends.rattler_backend import rattler_available
    from srcbuild.host.jobs import max_jobs
    from srcbuild.host.platform import host_platform_tag

    major = recipe.toolchain.gcc.split(".")[0]
    gcc = facts.gcc(int(major)) if major.isdigit() else None
    cuda_home, cuda_source, cuda_version = None, "host probe (no matching nvcc found)", None
    toolkit = facts.cuda_toolkit(recipe.toolchain.cuda) if recipe.toolchain.cuda is not None else None
    if toolkit is not None:
        cuda_home, cuda_source = toolkit.home, f"host probe ({toolkit.source}: nvcc {toolkit.version})"
        cuda_version = toolkit.version
    cudnn = facts.cudnn_version(recipe.toolchain.cudnn) if recipe.toolchain.cudnn else None
    cudnn_root = Path(cudnn.header).parent.parent if cudnn is not None else None  # <root>/include/cudnn*.h
    res = facts.resources
    jobs, reason = max_jobs(res.memory_bytes if res else None, res.cores if res else 1)
    path = environ.get("PATH", "")
    ccache = shutil.which("ccache", path=path)
    sccache = shutil.which("sccache", path=path)
    python = shutil.which(f"python{recipe.toolchain.python}", path=path)
    ua = shutil.which("update-alternatives", path=path + ":/usr/sbin:/sbin") or "update-alternatives"
    return BuildHost(
        gcc=Path(gcc.path) if gcc else None,
        gxx=Path(gcc.gxx) if gcc and gcc.gxx else None,
        gcc_version=gcc.version if gcc else None,
        cuda_home=Path(cuda_home) if cuda_home else None,
        cuda_home_source=cuda_source,
        cuda_version=cuda_version,
        cudnn_root=cudnn_root,
        cudnn_version=cudnn.version if cudnn is not None else None,
        ccache=Path(ccache) if ccache else None,
        sccache=Path(sccache) if sccache else None,
        python=Path(python) if python else None,
        max_jobs=jobs,
        max_jobs_reason=reason,
        update_alternatives=ua,
        conda_tools=tuple(conda_tools_on_path(environ).items()),
        rattler=rattler_available(),
        host_python_path=sys.executable,
        platform=host_platform_tag(),
        facts=facts,
    )


def probe_dist_cluster(
    decided: Decided, sccache: Path | None, paths: Paths, environ: Mapping[str, str]
) -> DistCluster | None:
    """The capacity of the sccache-dist scheduler the build names (None: it names none, or its
    compiler cache cannot be sccache: resolve then says why), both as decided before the probe
    (``srcbuild.resolve.decide``). Raises ``HostError`` without the client token
    (``SRCBUILD_DIST_TOKEN``)."""
    from srcbuild.compiler_cache.dist import probe_cluster

    scheduler = decided.dist_scheduler.value
    if scheduler is None or not decided.may_use_sccache:
        return None
    named = decided.dist_scheduler.origin
    if sccache is None:
        return DistCluster(scheduler, source=f"not asked: no sccache on PATH; scheduler from {named}")
    capacity = probe_cluster(scheduler, sccache, paths.work_dir, environ)
    servers, cpus = capacity if capacity is not None else (0, 0)
    return DistCluster(scheduler, servers, cpus, f"{sccache.name} --dist-status; scheduler from {named}")


def probe_build_host(
    recipe: Recipe,
    decided: Decided,
    paths: Paths,
    environ: Mapping[str, str],
    meanwhile: Callable[[], None] | None = None,
) -> BuildHost:
    """Probe the host for a build of ``recipe`` with the settings ``decided``. The probe mostly
    waits for programs (nvcc, gcc, mpicc), so it runs in a thread while this one runs
    ``meanwhile`` (loading the knowledge base, importing the modules of a build's later steps)."""
    from srcbuild.host import probe_host
    from srcbuild.toolchain.homes import provisioned_dirs

    probe_env = dict(environ)
    chosen = decided.cuda_home.value
    if chosen:  # the host checks look at the toolkit the build will use
        probe_env["CUDA_HOME"] = chosen
    found: list[HostFacts] = []

    def probe_now() -> HostFacts:
        return probe_host(environ=probe_env, work_dir=paths.work_dir, toolchain_only=True, provisioned=provisioned_dirs)

    probe = threading.Thread(target=lambda: found.append(probe_now()), daemon=True)
    probe.start()
    try:
        if meanwhile is not None:
            meanwhile()
    finally:
        probe.join()
    facts = found[0] if found else probe_now()
    sccache = shutil.which("sccache", path=environ.get("PATH", ""))
    cluster = probe_dist_cluster(decided, Path(sccache) if sccache else None, paths, environ)
    return replace(build_host(recipe, facts, environ), dist_cluster=cluster)
