"""Provisioning as part of a build: what will be fetched before the environment step, and the host
facts as they will be once it is (pure until ``run_planned``).

``plan_provisioning`` turns the pins the host lacks into ``PlannedProvision``s (what, from where,
how big, into which prefix: the prefix is known before anything is fetched, it is the store key of
the offer) and returns the host facts with those prefixes added, as the probe will see them after
provisioning: a CUDA home, a gcc, a cuDNN header, an MPI. The resolve and preflight stages then
decide with these facts as with any host's, and ``--no-provision`` simply skips this. MAGMA, which
the host probe does not look for, comes back as ``magma_home`` (provisioned or planned).

``run_planned`` provisions by the planned route; when that route fails at run time (its host no
longer answers, its mirror lacks a file), the next routes follow in the documented order, one line
saying which failed and which is used. A prefix made by another route than the planned one is not
the prefix the build was planned with: ``Rerouted`` says so, and the build is planned again
(``srcbuild.pipeline``), finding that prefix provisioned.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.errors import DiskFull, HostError
from srcbuild.files import human_size
from srcbuild.host.facts import CudaToolkit, GccInstall, HeaderVersion, HostFacts, MpiInstall
from srcbuild.recipe.model import Recipe
from srcbuild.records import record
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.toolchain.needs import Need, needs_for, uses_magma
from srcbuild.toolchain.providers.base import Offer, Request
from srcbuild.toolchain.provision import FALL_THROUGH, Outcome, existing, provision, routes
from srcbuild.toolchain.session import Session
from srcbuild.toolchain.store import ToolchainStore, toolchain_key

if TYPE_CHECKING:
    from srcbuild.toolchain.reach import Reach

PLANNED = "srcbuild toolchain (provisioned before the build)"


@record
class PlannedProvision:
    offer: Offer
    prefix: Path

    def describe(self) -> str:
        offer = self.offer
        size = f", {human_size(offer.size)}" if offer.size else ""
        return f"provision {offer.request.label} ({offer.provider}{size}) from {offer.origin} into {self.prefix}"

    def command(self) -> str:
        """The ``srcbuild toolchain install`` line that does the same (``srcbuild plan --format shell``)."""
        request = self.offer.request
        argv = ["srcbuild", "toolchain", "install", request.tool, request.version, "--from", self.offer.provider]
        if request.cuda and request.tool in ("cudnn", "nccl"):
            argv += ["--cuda", request.cuda]
        if request.tool == "mpi":
            argv += ["--mpi", request.flavour or "openmpi"]
        if request.sysroot:
            argv += ["--sysroot", request.sysroot]
        for arch in request.archs:
            argv += ["--arch", arch]
        return " ".join(shlex.quote(a) for a in argv)

    def to_json(self) -> dict[str, object]:
        return {**self.offer.to_json(), "prefix": str(self.prefix), "command": self.command()}


@record
class Provisioning:
    steps: tuple[PlannedProvision, ...]
    needs: tuple[Need, ...]
    facts: HostFacts  # the host facts once the steps have run
    magma_home: Path | None = None  # the MAGMA prefix the build points MAGMA_HOME at


def _full_version(offer: Offer, facts: ToolchainFacts) -> str:
    request = offer.request
    if request.tool == "cuda":
        for found in (facts.redist_for(request.version), facts.runfile_for(request.version)):
            if found is not None:
                return found.version
        route = facts.debian_for(request.version)
        return route.expect if route else request.version
    if request.tool == "cudnn":
        return offer.version.split("-cuda")[0]
    return request.version


def _with(host: HostFacts, step: PlannedProvision, facts: ToolchainFacts) -> HostFacts:
    request, prefix = step.offer.request, step.prefix
    version = _full_version(step.offer, facts)
    if request.tool == "cuda":
        toolkit = CudaToolkit(version, prefix, prefix / "bin" / "nvcc", PLANNED)
        return dataclasses.replace(host, cuda_toolkits=(*host.cuda_toolkits, toolkit))
    if request.tool == "gcc":
        major = request.version.split(".")[0]
        gcc = GccInstall(int(major), version, prefix / "bin" / f"gcc-{major}", prefix / "bin" / f"g++-{major}")
        return dataclasses.replace(host, gccs=(*host.gccs, gcc))
    if request.tool == "cudnn":
        header = HeaderVersion(version, prefix / "include" / "cudnn.h")
        return dataclasses.replace(host, cudnn=(*host.cudnn, header))
    if request.tool == "mpi":
        bin_dir = prefix / "bin"
        mpi = MpiInstall(request.flavour or "openmpi", version, bin_dir / "mpicc", bin_dir / "mpicxx", PLANNED)
        return dataclasses.replace(host, mpi=(*host.mpi, mpi))
    return host


def plan_provisioning(
    recipe: Recipe,
    host: HostFacts,
    store: ToolchainStore,
    facts: ToolchainFacts,
    prefer: Sequence[str] = (),
    exclude: Sequence[str] = (),
    sysroot: str | None = None,
    reach: Reach | None = None,
) -> Provisioning:
    """``exclude``: tools never provisioned (``cuda`` when the user named a CUDA home); ``sysroot``:
    a portable build's glibc, whose gcc is a conda gcc with that sysroot (``needs.requests_for``)."""
    needs = tuple(
        n for n in needs_for(recipe, host, store, facts, prefer, sysroot, reach) if n.request.tool not in exclude
    )
    steps = tuple(
        PlannedProvision(n.offer, store.root / toolchain_key(n.offer.name, n.offer.version, n.offer.provider))
        for n in needs
        if n.offer is not None
    )
    planned = host
    for step in steps:
        planned = _with(planned, step, facts)
    magma = next((n.where for n in needs if n.request.tool == "magma" and n.status == "provisioned"), None)
    magma = next((s.prefix for s in steps if s.offer.request.tool == "magma"), magma)
    return Provisioning(steps, needs, planned, magma)


def provisioned_magma(recipe: Recipe, store: ToolchainStore) -> Path | None:
    """The MAGMA prefix already provisioned for the recipe's CUDA, when its torch uses MAGMA."""
    if not uses_magma(recipe) or recipe.toolchain.cuda is None:
        return None
    found = existing(Request("magma", recipe.toolchain.cuda, cuda=recipe.toolchain.cuda), store)
    return found.prefix if found is not None else None


class Rerouted(HostError):
    """A planned toolchain route failed at run time and another made the prefix: the build's plan
    names the planned route's prefix, so it is planned again (``srcbuild.pipeline`` does, once)."""


def run_planned(steps: tuple[PlannedProvision, ...], session: Session) -> list[Outcome]:
    """Provision each planned step (CUDA first: NCCL builds on it); reuse what is already there. A
    route that fails gives way to the next in the documented order (see the module docstring)."""
    outcomes = []
    for step in steps:
        outcome = _provision_step(step, session)
        outcomes.append(outcome)
        if step.offer.request.tool == "cuda":
            session = session.with_home("cuda", outcome.toolchain.prefix)
    return outcomes


def _provision_step(step: PlannedProvision, session: Session) -> Outcome:
    request, planned = step.offer.request, step.offer.provider
    try:
        return provision(request, session.facts, session.store, session.ctx, planned)
    except DiskFull:
        raise
    except FALL_THROUGH as exc:
        failed, error = planned, exc
    offers, _ = routes(request, session.facts, prefer=session.prefer, reach=session.reach)
    for offer in (o for o in offers if o.provider != planned):
        _say(session, f"route {failed} failed: {error.message}; using route {offer.provider}")
        try:
            return provision(request, session.facts, session.store, session.ctx, offer.provider)
        except DiskFull:
            raise
        except FALL_THROUGH as exc:
            failed, error = offer.provider, exc
    raise error


def _say(session: Session, line: str) -> None:
    if session.ctx.stream is not None:
        print(line, file=session.ctx.stream, flush=True)


def rerouted(steps: tuple[PlannedProvision, ...], outcomes: Sequence[Outcome]) -> Rerouted | None:
    """``Rerouted`` naming each step whose prefix another route made, or None when all are as planned."""
    moved = [(s, o) for s, o in zip(steps, outcomes) if o.toolchain.prefix != s.prefix]
    if not moved:
        return None
    what = "; ".join(f"{s.offer.request.label} by route {o.toolchain.provider} into {o.toolchain.prefix}, "
                     f"not route {s.offer.provider}" for s, o in moved)
    return Rerouted(f"provisioned {what}: the build was planned with the planned route's prefix",
                    "the build is planned again with this prefix; run the same command again if it was not")
