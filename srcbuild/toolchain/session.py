"""Everything one provisioning run uses, resolved once from paths, options and the environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from srcbuild.paths import Paths
from srcbuild.toolchain.download import MIRROR_VAR, Downloader
from srcbuild.toolchain.facts import ToolchainFacts, load_facts
from srcbuild.toolchain.providers.base import Context
from srcbuild.toolchain.store import ToolchainStore


@dataclass(frozen=True)
class Session:
    store: ToolchainStore
    facts: ToolchainFacts
    ctx: Context

    def with_home(self, tool: str, home: Path) -> Session:
        homes = {**self.ctx.homes, tool: home}
        return Session(self.store, self.facts, Context(**{**self.ctx.__dict__, "homes": homes}))


def open_session(
    paths: Paths,
    offline: bool = False,
    stream: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
    mirror: str | None = None,
) -> Session:
    env = dict(os.environ if environ is None else environ)
    store = ToolchainStore(paths.toolchain_dir)
    out = sys.stderr if stream is None else stream
    downloader = Downloader(store.downloads, mirror=mirror or env.get(MIRROR_VAR) or None, offline=offline, stream=out)
    ctx = Context(
        downloader=downloader,
        environ=env,
        work_dir=store.root / ".work",
        log_path=paths.logs_dir / "toolchain.log",
        stream=out,
    )
    return Session(store, load_facts(env), ctx)
