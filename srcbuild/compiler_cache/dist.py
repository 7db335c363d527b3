"""The sccache-dist client side: the configuration file that makes sccache send compile jobs to a
scheduler, and the cluster's capacity (a host fact: ``srcbuild.resolve.probe`` asks it when a build
names a scheduler, and resolve makes it ``MAX_JOBS``).

sccache reads its client configuration from ``SCCACHE_CONF`` (sccache docs/Distributed.md,
"Configure a client")::

    [dist]
    scheduler_url = "http://scheduler:10600"
    toolchains = []                      # gcc and clang are packaged by sccache itself
    toolchain_cache_size = 5368709120
    cache_dir = "<work dir>/compiler-cache/dist-toolchains"

    [dist.auth]
    type = "token"
    token = "..."                        # from SRCBUILD_DIST_TOKEN, never printed

The file is written with mode 0600 next to the local cache. ``sccache --dist-status`` asks the
scheduler for its servers and CPUs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from srcbuild import proc
from srcbuild.compiler_cache import CompilerCacheConfig, local_dir
from srcbuild.compiler_cache.sccache import dist_config_path
from srcbuild.errors import HostError
from srcbuild.files import write_atomic
from srcbuild.precedence import env_value

TOKEN_VAR = "SRCBUILD_DIST_TOKEN"


def client_config_text(config: CompilerCacheConfig, token: str) -> str:
    toolchains = Path(config.local_dir or "compiler-cache").parent / "dist-toolchains"
    return (
        "[dist]\n"
        f"scheduler_url = {json.dumps(config.dist_scheduler)}\n"
        "toolchains = []\n"
        "toolchain_cache_size = 5368709120\n"
        f"cache_dir = {json.dumps(str(toolchains))}\n\n"
        "[dist.auth]\n"
        'type = "token"\n'
        f"token = {json.dumps(token)}\n"
    )


def write_client_config(config: CompilerCacheConfig, environ: Mapping[str, str]) -> Path:
    """Write the client configuration (0600, atomically) and return its path."""
    token = env_value(environ, TOKEN_VAR) or ""
    if not token:
        raise HostError(
            f"--dist-scheduler {config.dist_scheduler}: no client token in {TOKEN_VAR}",
            f"export {TOKEN_VAR}=<the scheduler's client token> (docs/scale-out.md)",
        )
    path = dist_config_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, client_config_text(config, token), mode=0o600)
    return path


def parse_dist_status(text: str) -> tuple[int, int] | None:
    """(servers, CPUs) from ``sccache --dist-status``'s JSON, None when it reports no scheduler."""
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
        status = data["SchedulerStatus"][1]  # type: ignore[index]
        return int(status["num_servers"]), int(status["num_cpus"])
    except (ValueError, TypeError, KeyError, IndexError):
        return None


def cluster_capacity(config: CompilerCacheConfig, environ: Mapping[str, str]) -> tuple[int, int] | None:
    """(servers, CPUs) the scheduler reports, asked through a client configured like the build."""
    path = write_client_config(config, environ)
    env = {**environ, "SCCACHE_CONF": str(path)}
    out = proc.probe([config.launcher or "sccache", "--dist-status"], env=env, timeout=30)
    return parse_dist_status(out) if out is not None else None


def probe_cluster(scheduler: str, sccache: Path, work_dir: Path, environ: Mapping[str, str]) -> tuple[int, int] | None:
    """``cluster_capacity`` of ``scheduler``, asked through the client configuration a build with
    this work dir writes (the same file, so the build reuses it)."""
    config = CompilerCacheConfig(
        kind="sccache",
        launcher=str(sccache),
        dist_scheduler=scheduler,
        local_dir=str(local_dir(work_dir, "sccache")),
        base_dir=str(work_dir),
    )
    return cluster_capacity(config, environ)
