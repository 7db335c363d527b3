"""Solving conda specs and linking the packages into a prefix with py-rattler, outside any build
environment: the toolchain's conda route (CUDA, gcc, MPI from conda-forge) and a Python made for
running wheels (``envs.runtime``) both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from srcbuild.errors import EnvironmentError_


def solve_and_install(
    specs: Sequence[str],
    channel_urls: Sequence[str],
    target: Path,
    final: Path,
    cache: Path,
    channel: str = "conda-forge",
) -> list[tuple[str, str, int]]:
    """Solve ``specs`` for linux-64 on the channels and link them into ``target`` as if at ``final``;
    the files it was made from, as (url, sha256, size)."""
    import rattler

    gateway = rattler.Gateway(cache_dir=cache / "repodata", show_progress=False)

    async def run() -> list[tuple[str, str, int]]:
        records = await rattler.solve(
            sources=[rattler.Channel(u) for u in channel_urls],
            specs=list(specs),
            gateway=gateway,
            platforms=["linux-64", "noarch"],
            virtual_packages=[v.into_generic() for v in rattler.VirtualPackage.detect()],
        )
        await rattler.install(
            list(records),
            target_prefix=target,
            cache_dir=cache / "pkgs",
            alternative_target_prefix=final,
            execute_link_scripts=True,
            show_progress=False,
        )
        return [(str(r.url), str(r.sha256.hex() if r.sha256 else ""), int(r.size or 0)) for r in records]

    import asyncio  # only when installing: the event loop costs every command 10 ms to import

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EnvironmentError_(
            f"installing {', '.join(specs)} from {', '.join(channel_urls)} failed: {first}",
            f"set SRCBUILD_CHANNEL_MIRRORS='{channel}=URL' to a reachable mirror and run the same command again",
        ) from None
