"""The host facts a build is resolved from: ``probe_build_host`` probes this machine once.

This is the one place of the resolve stage that looks at the machine: it runs the host probe
(``srcbuild.host.probe_host``: nvcc, gcc, MPI, cuDNN headers, memory, disk), looks up ccache, the
recipe's Python, update-alternatives and the conda-family tools on PATH, and asks whether
py-rattler imports. When the build names an sccache-dist scheduler (``--dist-scheduler``,
``SRCBUILD_DIST_SCHEDULER``), it asks the scheduler for its build servers and CPUs
(``sccache --dist-status``): resolve makes that ``MAX_JOBS``. Unless ``--no-provision``, the pins
the host lacks that a provider can fetch become planned provisioning steps
(``srcbuild.toolchain.planned``), and the facts count their prefixes as present. ``build_host``
turns the probe's answer into ``BuildHost`` and is pure apart from the PATH lookups.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from srcbuild.config import origin
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve.inputs import BuildHost, BuildOptions, DistCluster


def build_host(recipe: Recipe, facts: Any, environ: Mapping[str, str]) -> BuildHost:
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
        host_python=f"{sys.version_info[0]}.{sys.version_info[1]}",
        host_python_path=sys.executable,
        platform=host_platform_tag(),
        facts=facts,
    )


def probe_dist_cluster(
    options: BuildOptions,
    sccache: Path | None,
    paths: Paths,
    environ: Mapping[str, str],
    recipe_kind: str | None = None,
) -> DistCluster | None:
    """The capacity of the sccache-dist scheduler the build names (None: it names none, or its
    compiler cache cannot be sccache: resolve then says why). The compiler cache is the one the
    build names wherever it was said (``compiler_cache.named_kind``: the command line, the
    environment, the recipe's ``compiler_cache``). Raises ``HostError`` without the client token
    (``SRCBUILD_DIST_TOKEN``)."""
    from srcbuild.compiler_cache import named_kind
    from srcbuild.compiler_cache.dist import probe_cluster

    scheduler = options.dist_scheduler or environ.get("SRCBUILD_DIST_SCHEDULER") or None
    if scheduler is None or named_kind(options.compiler_cache, recipe_kind, environ)[0] not in ("auto", "sccache"):
        return None
    named = "command line --dist-scheduler" if options.dist_scheduler else origin(environ, "SRCBUILD_DIST_SCHEDULER")
    if sccache is None:
        return DistCluster(scheduler, source=f"not asked: no sccache on PATH; scheduler from {named}")
    capacity = probe_cluster(scheduler, sccache, paths.work_dir, environ)
    servers, cpus = capacity if capacity is not None else (0, 0)
    return DistCluster(scheduler, servers, cpus, f"{sccache.name} --dist-status; scheduler from {named}")


def probe_build_host(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    meanwhile: Callable[[], None] | None = None,
) -> BuildHost:
    """Probe the host for a build of ``recipe``. The probe mostly waits for programs (nvcc, gcc,
    mpicc), so it runs in a thread while this one runs ``meanwhile`` (loading the knowledge base,
    importing the modules of a build's later steps)."""
    from srcbuild.host import probe_host

    probe_env = dict(environ)
    chosen = options.cuda_home or environ.get("SRCBUILD_CUDA_HOME")
    if chosen:  # the host checks look at the toolkit the build will use
        probe_env["CUDA_HOME"] = chosen
    found: list[Any] = []
    probe = threading.Thread(
        target=lambda: found.append(probe_host(environ=probe_env, work_dir=paths.work_dir, toolchain_only=True)),
        daemon=True,
    )
    probe.start()
    try:
        if meanwhile is not None:
            meanwhile()
    finally:
        probe.join()
    facts = found[0] if found else probe_host(environ=probe_env, work_dir=paths.work_dir, toolchain_only=True)
    from dataclasses import replace

    sccache = shutil.which("sccache", path=environ.get("PATH", ""))
    cluster = probe_dist_cluster(
        options, Path(sccache) if sccache else None, paths, environ, recipe.build.compiler_cache
    )
    from srcbuild.resolve.portable import portable_choice, sysroot_gcc, sysroot_glibc
    from srcbuild.toolchain.facts import load_facts
    from srcbuild.toolchain.needs import needs_for
    from srcbuild.toolchain.planned import plan_provisioning, provisioned_magma
    from srcbuild.toolchain.providers import provider_order
    from srcbuild.toolchain.store import ToolchainStore

    glibc = sysroot_glibc(environ) if portable_choice(recipe, options, environ).on else None
    store = ToolchainStore(paths.toolchain_dir)
    if options.no_provision and glibc is None:  # a MAGMA already provisioned is used, as a provisioned CUDA is
        magma = provisioned_magma(recipe, store)
        return replace(build_host(recipe, facts, environ), magma_home=magma, dist_cluster=cluster)
    data = load_facts(environ)
    if options.no_provision:  # a portable build still looks for its compiler, and fetches nothing
        magma = provisioned_magma(recipe, store)
        host = replace(build_host(recipe, facts, environ), magma_home=magma, dist_cluster=cluster)
        needs = needs_for(recipe, facts, store, data, provider_order(environ), glibc)
    else:
        exclude = ("cuda",) if chosen else ()  # a CUDA home the user named is never replaced
        planned = plan_provisioning(recipe, facts, store, data, provider_order(environ), exclude, glibc)
        host = replace(
            build_host(recipe, planned.facts, environ),
            provisioning=planned.steps,
            magma_home=planned.magma_home,
            dist_cluster=cluster,
        )
        needs = list(planned.needs)
    if glibc is None:
        return host
    need = next(n for n in needs if n.request.tool == "gcc")
    if options.no_provision and need.offer is not None:  # a prefix the build would fetch: not here
        need = replace(
            need, status="missing", offer=None, why=f"--no-provision: {need.offer.describe()} is not fetched"
        )
    where = data.sysroot.path if data.sysroot is not None else ""
    return replace(host, sysroot_gcc=sysroot_gcc(need, glibc, where, paths.toolchain_dir))
