"""The build environment's conda packages as local channels: ``DIR/conda/<channel>/<subdir>/``.

The recipe's environment (``envs.spec.env_spec_for``) is solved for the portable virtual packages
(as ``srcbuild lock`` solves it), each package is fetched through the channel routing in force
(``--channel-mirror``, ``SRCBUILD_CHANNEL_ALIAS``) and checked against the solve's sha256 and md5,
and put at its channel's path; rattler's indexer then writes each subdir's ``repodata.json``.
With ``--mirror-dir`` the channel alias is ``DIR/conda``, so every named channel is read there.

The toolchain's conda pieces (gcc, MPI, MAGMA, CUDA from the nvidia channel) go the same way:
their match specs solved on their channel (``specs``), so the ``conda`` provider finds them there.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from srcbuild.envs.fetch import fetch_verified, file_hashes
from srcbuild.envs.solve import solve_spec
from srcbuild.envs.spec import EnvSpec
from srcbuild.mirror.layout import CONDA
from srcbuild.mirror.manifest import Entry

_TAIL = re.compile(r"/([^/]+)/([^/]+)/([^/]+)$")  # <channel>/<subdir>/<file>


def channel_path(url: str) -> str | None:
    """``conda/<channel>/<subdir>/<file>`` for a canonical package URL (``.../<channel>/<subdir>/<file>``)."""
    match = _TAIL.search(url)
    if match is None:
        return None
    channel, subdir, name = match.groups()
    return f"{CONDA}/{channel}/{subdir}/{name}"


def mirror_env(
    root: Path,
    spec: EnvSpec,
    work: Path,
    log_path: Path | None,
    echo: IO[str] | None,
    specs: Sequence[str] | None = None,
    glibc: str | None = None,
) -> dict[str, Entry]:
    """Fetch the solved packages (of ``specs`` on the spec's channels when given) into
    ``root/conda``; the manifest rows of the files it added. ``glibc``: the other machine's (the
    solve's ``__glibc``), else the lockfile default."""
    added: dict[str, Entry] = {}
    if not spec.conda_specs:
        return added
    packages = solve_spec(spec, work / "repodata", log_path, for_this_host=False, specs=specs, glibc=glibc)
    for package in packages:
        rel = channel_path(package.url)
        if rel is None:
            continue
        target = root / rel
        if target.is_file() and file_hashes(target)[0] == package.sha256:
            continue
        routed = spec.routing.route_url(package.url, spec.channels)
        path = fetch_verified(package, routed, work / "downloads", "the solve", echo)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        added[rel] = Entry(package.sha256, target.stat().st_size, package.url)
    return added


def index_channels(root: Path) -> None:
    """Write ``repodata.json`` for every subdir of every channel under ``root/conda``."""
    import asyncio

    from rattler.index import index_fs

    top = root / CONDA
    if not top.is_dir():
        return
    for channel in sorted(p for p in top.iterdir() if p.is_dir()):
        (channel / "noarch").mkdir(exist_ok=True)  # a channel without noarch/ is not read by solvers
        asyncio.run(index_fs(channel, force=True, write_zst=False, write_shards=False))
