"""Everything one provisioning run uses, resolved once from paths, options and the environment.

The mirror of NVIDIA's downloads: ``--mirror`` > ``SRCBUILD_NVIDIA_MIRROR`` > ``nvidia_mirror`` in
``<config dir>/toolchain.toml`` (``SRCBUILD_CONFIG_DIR``, default the user config directory). With
a mirror directory (``--mirror-dir``, ``SRCBUILD_MIRROR_DIR``) its ``nvidia/`` is the only source.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO

from srcbuild.errors import UsageError
from srcbuild.offline import DIR_VAR
from srcbuild.paths import Paths, default_config_dir
from srcbuild.precedence import env_value
from srcbuild.records import record
from srcbuild.toolchain.data_files import load_facts
from srcbuild.toolchain.download import MIRROR_VAR, Downloader
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.toolchain.providers import provider_order
from srcbuild.toolchain.providers.base import Context
from srcbuild.toolchain.reach import Reach
from srcbuild.toolchain.store import ToolchainStore


@record
class Session:
    store: ToolchainStore
    facts: ToolchainFacts
    ctx: Context
    prefer: tuple[str, ...] = ()  # SRCBUILD_TOOLCHAIN_PROVIDERS
    reach: Reach | None = None  # probes each route's host before it is chosen

    def with_home(self, tool: str, home: Path) -> Session:
        homes = {**self.ctx.homes, tool: home}
        return replace(self, ctx=replace(self.ctx, homes=homes))


def configured_mirror(environ: Mapping[str, str]) -> str | None:
    """``nvidia_mirror`` from ``toolchain.toml`` in the config directory, if set."""
    path = default_config_dir(environ) / "toolchain.toml"
    if not path.is_file():
        return None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        value = tomllib.loads(path.read_text(encoding="utf-8")).get("nvidia_mirror")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}", f"fix or remove {path}") from None
    if value is not None and not isinstance(value, str):
        raise UsageError(
            f"{path}: nvidia_mirror must be a URL string", f'write nvidia_mirror = "https://..." in {path}'
        )
    return value or None


def open_session(
    paths: Paths,
    offline: bool = False,
    stream: IO[str] | None = None,
    *,
    environ: Mapping[str, str],
    mirror: str | None = None,
) -> Session:
    env = dict(environ)
    store = ToolchainStore(paths.toolchain_dir)
    out = sys.stderr if stream is None else stream
    mirror_dir = env_value(env, DIR_VAR) or None  # --mirror-dir: its NVIDIA part and nothing else
    chosen = nvidia_mirror(env, mirror)
    downloader = Downloader(store.downloads, mirror=chosen, offline=offline, stream=out, mirror_dir=mirror_dir)
    ctx = Context(
        downloader=downloader,
        environ=env,
        work_dir=store.root / ".work",
        log_path=paths.logs_dir / "toolchain.log",
        stream=out,
    )
    facts = load_facts(env)
    return Session(store, facts, ctx, provider_order(env), route_reach(facts, env, mirror, offline))


def nvidia_mirror(environ: Mapping[str, str], mirror: str | None = None) -> str | None:
    """The mirror NVIDIA's downloads come from: ``--mirror`` > SRCBUILD_NVIDIA_MIRROR > toolchain.toml
    (with ``--mirror-dir``, the variable that names its NVIDIA part alone)."""
    given = env_value(environ, MIRROR_VAR)
    if env_value(environ, DIR_VAR):
        return given
    return mirror or given or configured_mirror(environ)


def route_reach(
    facts: ToolchainFacts, environ: Mapping[str, str], mirror: str | None = None, offline: bool = False
) -> Reach:
    """The probe of each route's host, with the mirrors this run uses (none under --offline or --mirror-dir)."""
    off = offline or bool(env_value(environ, DIR_VAR))
    return Reach(facts, dict(environ), nvidia_mirror(environ, mirror), off=off)
