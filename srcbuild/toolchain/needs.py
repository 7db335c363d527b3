"""What a recipe's toolchain pins need on this machine: the host's own tool, a provisioned prefix,
or a provider's offer to fetch it (pure: host facts, the store's manifests and the data).

The host's install is always preferred when it matches the pin; then a prefix already in the
toolchains directory; then the first provider that can serve the pin. ``fetch_line`` is what
``srcbuild doctor`` prints: "srcbuild will fetch: CUDA 9.2 (runfile), cuDNN 7.6 (nvidia), gcc 7 (conda)".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.errors import HostError
from srcbuild.host.facts import HostFacts, version_matches
from srcbuild.recipe.model import Recipe
from srcbuild.records import record
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.toolchain.providers import offers_for
from srcbuild.toolchain.providers.base import Offer, Request
from srcbuild.toolchain.provision import existing
from srcbuild.toolchain.store import ToolchainStore

if TYPE_CHECKING:
    from srcbuild.toolchain.reach import Reach


@record
class Need:
    """One pin and how it is met: ``"host"``, ``"provisioned"``, ``"fetch"`` or ``"missing"``."""

    request: Request
    status: str
    where: Path | None = None  # the host's install or the provisioned prefix
    offer: Offer | None = None
    why: str = ""  # for "missing": what the data lacks
    passed_over: tuple[str, ...] = ()  # routes that cannot be reached from here, one line each

    def to_json(self) -> dict[str, object]:
        return {
            "tool": self.request.tool,
            "version": self.request.version,
            "status": self.status,
            "where": str(self.where) if self.where else None,
            "offer": self.offer.to_json() if self.offer else None,
            "why": self.why or None,
        }


MAGMA_PACKAGES = ("magma",)  # an [env] conda package whose name starts so brings its own MAGMA


def uses_magma(recipe: Recipe) -> bool:
    """torch builds with MAGMA when it finds one (``USE_MAGMA`` defaults on with CUDA); a recipe
    turns it off with ``USE_MAGMA=0`` in ``[build] env``, or brings its own in ``[env] conda``."""
    if recipe.toolchain.cuda is None or dict(recipe.build.env).get("USE_MAGMA") == "0":
        return False
    return not any(spec.strip().lower().startswith(MAGMA_PACKAGES) for spec in recipe.env.conda)


def gcc_release(gcc: str, cuda: str | None) -> str:
    """The gcc to provision for the recipe's ``gcc`` major: the major itself ("10": any 10.x), or
    the newest good release when later ones are known bad with this CUDA ("10.2" for CUDA up to
    11.4.0, where gcc 10.3 and later break nvcc: a conda gcc is pinned to 10.2.*, a host gcc must be
    10.2 or older)."""
    from srcbuild.knowledge import load_knowledge

    major = gcc.split(".")[0]
    if cuda is None or gcc != major or not major.isdigit():
        return gcc
    return load_knowledge().gcc_pin(cuda, int(major)) or gcc


def requests_for(recipe: Recipe, sysroot: str | None = None) -> list[Request]:
    """The pins of ``recipe`` that srcbuild can provision, in the order a build needs them.
    ``sysroot``: a portable build's glibc ("2.17"); its gcc is a conda gcc with that sysroot.

    MAGMA is asked for whenever the recipe's torch uses it; ``needs_for`` drops it quietly when no
    ``magma-cudaXY`` exists for the CUDA or its kernels do not run on the recipe's GPUs (torch then
    builds without MAGMA, as it always could)."""
    tc = recipe.toolchain
    out: list[Request] = []
    if tc.cuda:
        out.append(Request("cuda", tc.cuda))
        if tc.cudnn:  # the archs: its kernels are read and must run on the recipe's GPUs
            out.append(Request("cudnn", tc.cudnn, cuda=tc.cuda, archs=tuple(str(cc) for cc in recipe.gpu.arch)))
        if uses_magma(recipe):
            out.append(Request("magma", tc.cuda, cuda=tc.cuda, archs=tuple(str(cc) for cc in recipe.gpu.arch)))
    out.append(Request("gcc", gcc_release(tc.gcc, tc.cuda), sysroot=sysroot))
    if recipe.mpi.enabled and recipe.mpi.version:
        out.append(Request("mpi", recipe.mpi.version, flavour=recipe.mpi.implementation))
    return out


def _on_host(request: Request, host: HostFacts) -> Path | None:
    if request.tool == "cuda":
        toolkit = host.cuda_toolkit(request.version)
        return toolkit.home if toolkit else None
    if request.tool == "cudnn":
        found = host.cudnn_version(request.version)
        return found.header.parent if found else None
    if request.tool == "gcc":
        gcc = host.gcc(int(request.version.split(".")[0]))
        if gcc is not None and "." in request.version and not _at_most(gcc.version, request.version):
            return None  # a host gcc 10.4 where 10.2 is the newest good one
        if gcc is not None and request.sysroot:  # only a conda gcc installed with that sysroot will do
            return gcc.path if conda_sysroot(gcc.path.parent.parent, request.sysroot) else None
        return gcc.path if gcc else None
    if request.tool == "mpi":
        mpi = next(
            (
                m
                for m in host.mpi
                if m.implementation == (request.flavour or "openmpi") and version_matches(request.version, m.version)
            ),
            None,
        )
        return mpi.mpicc if mpi else None
    return None


def conda_sysroot(prefix: Path, glibc: str) -> bool:
    """Whether the conda prefix holds conda-forge's ``sysroot_linux-64`` of ``glibc`` (its
    ``conda-meta`` record, which every conda-family installer writes)."""
    return any((prefix / "conda-meta").glob(f"sysroot_linux-64-{glibc}*.json"))


def needs_for(
    recipe: Recipe,
    host: HostFacts,
    store: ToolchainStore,
    facts: ToolchainFacts,
    prefer: Sequence[str] = (),
    sysroot: str | None = None,
    reach: Reach | None = None,
) -> list[Need]:
    """How each pin of ``recipe`` is met; a pin fetched takes the first route that can be reached
    (``reach`` probes; None: the first route in the documented order)."""
    from srcbuild.toolchain.provision import routes

    out = []
    for request in requests_for(recipe, sysroot):
        if request.tool == "magma" and not offers_for(request, facts):
            continue  # no magma-cudaXY for this CUDA whose kernels run on these GPUs: none at all
        on_host = _on_host(request, host)
        if on_host is not None:
            out.append(Need(request, "host", on_host))
            continue
        provisioned = existing(request, store)
        if provisioned is not None:
            out.append(Need(request, "provisioned", provisioned.prefix))
            continue
        try:
            offers, passed = routes(request, facts, prefer=prefer, reach=reach)
            used = offers[0].provider
            lines = tuple(p.line(used if used != p.provider else None) for p in passed)
            out.append(Need(request, "fetch", offer=offers[0], passed_over=lines))
        except HostError as exc:
            if request.tool != "magma":  # optional: torch builds without it
                out.append(Need(request, "missing", why=exc.message))
    return out


def fetch_line(needs: list[Need]) -> str | None:
    """ "srcbuild will fetch: CUDA 9.2 (runfile), ..." or None when nothing needs fetching."""
    offers = [n.offer.describe() for n in needs if n.offer is not None]
    missing = [f"{n.request.label} (no provider)" for n in needs if n.status == "missing"]
    items = offers + missing
    passed = "".join(f" ({line})" for n in needs for line in n.passed_over)
    return f"srcbuild will fetch: {', '.join(items)}{passed}" if items else None


def _at_most(found: str, newest: str) -> bool:
    """"10.2.1" is at most "10.2"; "10.4.0" is not (compared on the parts ``newest`` names)."""
    parts = [int(p) for p in found.split(".") if p.isdigit()]
    limit = [int(p) for p in newest.split(".")]
    return parts[: len(limit)] <= limit
