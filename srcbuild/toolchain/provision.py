"""Provisioning one request: reuse a prefix that serves it, or let the chosen provider make one.

``choose`` is pure (data and offers only); ``provision`` does the work through the store, so two
processes asking for the same toolkit at once make it once and the second reuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.capability import ComputeCapability
from srcbuild.errors import DiskFull, HostError, SrcbuildError, StepFailed, UsageError
from srcbuild.host.toolchain import missing_components
from srcbuild.records import record
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.toolchain.kernels import check_runs, recorded, scan_prefix
from srcbuild.toolchain.providers import PROVIDERS, offers_for
from srcbuild.toolchain.providers.base import TOOLS, Context, Offer, Request
from srcbuild.toolchain.store import Provisioned, Toolchain, ToolchainStore
from srcbuild.verify.kernels import covers

if TYPE_CHECKING:
    from srcbuild.toolchain.reach import Passed, Reach

# A route that fails with one of these (a host that cannot be reached, a mirror without the file,
# a failed fetch or unpack) gives way to the next route; a full disk does not (no route helps).
FALL_THROUGH = (HostError, StepFailed)

# Providers whose files do not come through the Downloader (which refuses them itself when offline):
# conda channels, apt, git.
FETCHING_ITSELF = ("conda", "debian", "pypi", "source")
KERNEL_TOOLS = ("cudnn", "nccl")  # their libraries' kernels are read after every fetch


@record
class Outcome:
    toolchain: Toolchain
    reused: bool
    offer: Offer | None  # None when an existing prefix served the request


def choose(
    request: Request,
    facts: ToolchainFacts,
    only: str | None = None,
    prefer: Sequence[str] = (),
    reach: Reach | None = None,
) -> Offer:
    """The first provider's offer for ``request`` whose route can be reached (``reach``: probed,
    see ``srcbuild.toolchain.reach``); an error naming what the data lacks otherwise."""
    return routes(request, facts, only, prefer, reach)[0][0]


def routes(
    request: Request,
    facts: ToolchainFacts,
    only: str | None = None,
    prefer: Sequence[str] = (),
    reach: Reach | None = None,
) -> tuple[list[Offer], list[Passed]]:
    """Every offer for ``request`` in the order they are tried (those that can be reached first),
    and the routes passed over because they cannot be; an error when there is none."""
    from srcbuild.toolchain.reach import ordered

    if request.tool not in TOOLS:
        raise UsageError(f"{request.tool}: not a tool srcbuild provisions", "srcbuild toolchain install cuda 11.8")
    offers = offers_for(request, facts, only, prefer)
    if not offers:
        how = f"--from {only}" if only else "any provider"
        names = ", ".join(n for n, p in PROVIDERS.items() if request.tool in p.tools)
        raise HostError(
            f"{request.label}: srcbuild's data has no way to provision it with {how} (providers for "
            f"{request.tool}: {names})",
            "install it yourself and point srcbuild at it, or add its URL and sha256 to a directory named "
            "by SRCBUILD_TOOLCHAIN_DATA",
        )
    return ordered(offers, reach)


def incomplete(entry: Toolchain) -> tuple[str, ...]:
    """The components of the complete-home contract a provisioned CUDA home lacks (one made before
    its route laid them in); empty for every other tool."""
    if entry.name != "cuda":
        return ()
    return missing_components(entry.prefix, entry.facts.get("nvcc") or entry.version)


def existing(request: Request, store: ToolchainStore, only: str | None = None) -> Toolchain | None:
    """A provisioned prefix that already serves ``request`` (any provider unless ``only``); a CUDA
    home lacking part of the complete-home contract does not."""
    if request.tool == "cudnn":
        for entry in store.entries():
            if entry.name == "cudnn" and entry.provider == (only or entry.provider):
                version, _, cuda = entry.version.partition("-cuda")
                if version.startswith(request.version) and request.cuda and request.cuda.startswith(cuda):
                    return entry
        return None
    name = (request.flavour or "openmpi") if request.tool == "mpi" else request.tool
    if request.tool == "nccl":
        archs = "+".join(a.replace(".", "") for a in request.archs)
        built = store.find("nccl", f"{request.version}-sm{archs}", only)
        if built is not None:
            return built
        # a prefix made for a CUDA major (NVIDIA's wheel: X-cudaN) serves archs its kernels cover
        major = (request.cuda or "").split(".")[0]
        for entry in store.entries():
            if entry.name != "nccl" or (only is not None and entry.provider != only):
                continue
            version, _, cuda = entry.version.partition("-cuda")
            if cuda == major and version.startswith(request.version) and _runs_on(entry, request.archs):
                return entry
        return None
    found = store.find(name, request.store_version, only)
    return None if found is not None and incomplete(found) else found


def _runs_on(entry: Toolchain, archs: tuple[str, ...]) -> bool:
    kernels = recorded(entry.facts)
    return kernels is not None and all(covers(kernels, ComputeCapability.parse(a)) for a in archs)


def provision(
    request: Request,
    facts: ToolchainFacts,
    store: ToolchainStore,
    ctx: Context,
    only: str | None = None,
    prefer: Sequence[str] = (),
    reach: Reach | None = None,
) -> Outcome:
    """Reuse a prefix serving ``request``, else provision it by the first route that works: a route
    whose host cannot be reached is passed over, and one that fails gives way to the next (one line
    each on ``ctx.stream``); with ``only`` that one route alone is tried."""
    found = existing(request, store, only)
    if found is not None:
        check_kernels(request, found, facts)
        return Outcome(found, True, None)
    offers, passed = routes(request, facts, only, prefer, reach)
    for note in passed:
        _say(ctx, note.line(offers[0].provider if offers[0].provider != note.provider else None))
    for i, offer in enumerate(offers):
        nxt = offers[i + 1] if i + 1 < len(offers) else None
        try:
            return _provision_by(offer, request, facts, store, ctx)
        except DiskFull:
            raise
        except FALL_THROUGH as exc:
            if nxt is None:
                raise
            _say(ctx, f"route {offer.provider} failed: {exc.message}; using route {nxt.provider}")
    raise AssertionError("routes() returns at least one offer")


def _say(ctx: Context, line: str) -> None:
    if ctx.stream is not None:
        print(line, file=ctx.stream, flush=True)


def _provision_by(
    offer: Offer, request: Request, facts: ToolchainFacts, store: ToolchainStore, ctx: Context
) -> Outcome:
    provider = PROVIDERS[offer.provider]
    if ctx.downloader.offline and offer.provider in FETCHING_ITSELF:
        raise HostError(
            f"{request.label} is not provisioned and --offline forbids fetching it from {offer.origin}",
            "run the same command without --offline once",
        )

    def create(target: Path, final: Path) -> Provisioned:
        made = provider.provision(offer, facts, target, final, ctx)
        if request.tool not in KERNEL_TOOLS:
            return made
        return Provisioned(made.sources, {**made.facts, **scan_prefix(target).facts()})

    stale = store.find(offer.name, offer.version, offer.provider)
    if stale is not None and stale.version == offer.version and incomplete(stale):
        if ctx.stream is not None:
            print(f"{stale.prefix} lacks {', '.join(incomplete(stale))}: provisioning it again", file=ctx.stream)
        store.remove(stale.name, stale.version, stale.provider)

    toolchain, reused = store.ensure(offer.name, offer.version, offer.provider, create)
    try:
        check_kernels(request, toolchain, facts)
    except SrcbuildError:
        raise  # a complete prefix that does not serve these GPUs: it is kept, it serves others
    except BaseException:
        if not reused:  # a check that broke off: nothing it did not finish checking stays installed
            store.remove(toolchain.name, toolchain.version, toolchain.provider)
        raise
    return Outcome(toolchain, reused, offer)


def check_kernels(request: Request, toolchain: Toolchain, facts: ToolchainFacts) -> None:
    """Refuse (exit 3) a cuDNN or NCCL whose libraries hold no kernel for one of the request's GPUs."""
    if request.tool not in KERNEL_TOOLS or not request.archs:
        return
    kernels = recorded(toolchain.facts)
    if kernels is None:
        scanned = scan_prefix(toolchain.prefix)
        kernels, libraries = scanned.kernels, scanned.libraries
    else:
        libraries = tuple(n for n in toolchain.facts.get("kernel_libraries", "").split(",") if n)
    version = toolchain.facts.get(request.tool) or toolchain.version
    check_runs(request.tool, version, toolchain.prefix, kernels, libraries, request.archs, facts)
