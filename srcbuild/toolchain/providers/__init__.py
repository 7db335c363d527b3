"""The providers by name, and the order they are tried in for each tool.

``provider_by_name`` raises a ``UsageError`` listing the valid names; ``offers_for`` asks each
provider of a tool, in order, and returns every offer (the first is the one used).
``SRCBUILD_TOOLCHAIN_PROVIDERS`` puts some providers first (``debian,redist`` on a Debian host,
where Debian's 100 MB of packages replace NVIDIA's 1.3 GB of archives).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from srcbuild.errors import UsageError
from srcbuild.precedence import env_value
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.toolchain.providers.base import Offer, Provider, Request
from srcbuild.toolchain.providers.conda import CondaProvider
from srcbuild.toolchain.providers.cudnn import CudnnProvider
from srcbuild.toolchain.providers.debian import DebianProvider
from srcbuild.toolchain.providers.nccl import NcclProvider
from srcbuild.toolchain.providers.pypi import PypiProvider
from srcbuild.toolchain.providers.redist import RedistProvider
from srcbuild.toolchain.providers.runfile import RunfileProvider

# Tried in this order. CUDA: NVIDIA's own archives first (checksums from NVIDIA), then the
# distribution. cuDNN and NCCL: NVIDIA's wheels on the package index first (the index pip is
# configured with, a site's mirror of it included, is reachable where NVIDIA's login-walled cuDNN
# archive and GitHub may not be; the same sha256 pinning), then NVIDIA's cuDNN archives, conda, and
# NCCL built from source (for GPUs the NCCL wheel has no kernels for, e.g. compute capability 3.0).
PROVIDERS: dict[str, Provider] = {
    "redist": RedistProvider(),
    "runfile": RunfileProvider(),
    "debian": DebianProvider(),
    "pypi": PypiProvider(),
    "nvidia": CudnnProvider(),
    "conda": CondaProvider(),
    "source": NcclProvider(),
}


def provider_by_name(name: str) -> Provider:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise UsageError(
            f"--from {name}: no such provider (valid: {', '.join(PROVIDERS)})",
            "srcbuild toolchain install cuda 11.8 --from redist",
        ) from None


ORDER_VAR = "SRCBUILD_TOOLCHAIN_PROVIDERS"


def provider_order(environ: Mapping[str, str]) -> tuple[str, ...]:
    """``SRCBUILD_TOOLCHAIN_PROVIDERS=debian,redist``: these providers first, in this order."""
    given = env_value(environ, ORDER_VAR) or ""
    names = tuple(n.strip() for n in given.replace(" ", ",").split(",") if n.strip())
    for name in names:
        if name not in PROVIDERS:
            raise UsageError(
                f"{ORDER_VAR}: no provider named {name} (valid: {', '.join(PROVIDERS)})",
                f"export {ORDER_VAR}=debian,redist",
            )
    return names


def offers_for(
    request: Request, facts: ToolchainFacts, only: str | None = None, prefer: Sequence[str] = ()
) -> list[Offer]:
    """Every provider's offer, in the default order with the ``prefer``red providers first."""
    order = [*prefer, *(n for n in PROVIDERS if n not in prefer)]
    providers = [provider_by_name(only)] if only else [PROVIDERS[n] for n in order]
    out = []
    for provider in providers:
        if request.tool not in provider.tools:
            continue
        offer = provider.offer(request, facts)
        if offer is not None:
            out.append(offer)
    return out
