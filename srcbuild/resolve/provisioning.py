"""Provisioning as resolve's own step: the pins the probed host lacks that a provider can fetch.

After the probe (``srcbuild.resolve.probe``) and before ``resolve``: unless ``--no-provision``,
each toolchain pin the host lacks that a provider can fetch becomes a planned provisioning step
(``srcbuild.toolchain.planned``), and the host facts count its prefix as present; a portable build
(decided before the probe, ``srcbuild.resolve.decide``) gets its conda gcc with the glibc sysroot
(``srcbuild.resolve.portable``). Reads the toolchain store and data; runs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve.decide import Decided
from srcbuild.resolve.inputs import BuildHost, BuildOptions
from srcbuild.resolve.probe import build_host

EXT_EXCLUDED = ("magma", "cudnn", "nccl", "mpi")


def with_provisioning(
    recipe: Recipe,
    options: BuildOptions,
    decided: Decided,
    host: BuildHost,
    paths: Paths,
    environ: Mapping[str, str],
) -> BuildHost:
    """``host`` with the planned provisioning, the MAGMA prefix and a portable build's compiler."""
    from srcbuild.resolve.portable import sysroot_gcc, sysroot_glibc
    from srcbuild.toolchain.data_files import load_facts
    from srcbuild.toolchain.needs import needs_for
    from srcbuild.toolchain.planned import plan_provisioning, provisioned_magma
    from srcbuild.toolchain.providers import provider_order
    from srcbuild.toolchain.session import route_reach
    from srcbuild.toolchain.store import ToolchainStore

    facts = host.facts
    assert facts is not None, "provisioning is planned from a probed host"
    glibc = sysroot_glibc(environ) if decided.portable.value else None
    store = ToolchainStore(paths.toolchain_dir)
    if options.no_provision and glibc is None:  # a MAGMA already provisioned is used, as a provisioned CUDA is
        return replace(host, magma_home=provisioned_magma(recipe, store))
    data = load_facts(environ)
    if options.no_provision:  # a portable build still looks for its compiler, and fetches nothing
        host = replace(host, magma_home=None if options.extension else provisioned_magma(recipe, store))
        needs = needs_for(recipe, facts, store, data, provider_order(environ), glibc)
    else:
        exclude = ("cuda",) if decided.cuda_home.value else ()  # a CUDA home the user named is never replaced
        if options.extension:  # an extension links none of torch's own libraries (MAGMA, cuDNN, NCCL, MPI)
            exclude = (*exclude, *EXT_EXCLUDED)
        reach = route_reach(data, environ)
        planned = plan_provisioning(recipe, facts, store, data, provider_order(environ), exclude, glibc, reach)
        host = replace(
            build_host(recipe, planned.facts, environ),
            provisioning=planned.steps,
            magma_home=planned.magma_home,
            dist_cluster=host.dist_cluster,
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
