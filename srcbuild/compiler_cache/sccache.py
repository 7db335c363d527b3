"""sccache as the compiler launcher: local disk, S3, redis, and sccache-dist clients.

Its settings are read once, when its server starts, so a build starts a server of its own with
the build's variables (``--stop-server`` first: a server started earlier may point elsewhere) and
zeroes its counters; the counters read after the build are this build's (``--show-stats
--stats-format json``). Variables, from sccache's docs (docs/S3.md, docs/Redis.md, docs/Local.md):
``SCCACHE_DIR``; ``SCCACHE_BUCKET``, ``SCCACHE_S3_KEY_PREFIX``, ``SCCACHE_REGION``,
``SCCACHE_ENDPOINT`` and ``SCCACHE_S3_USE_SSL`` for S3 (credentials: the AWS variables or
``~/.aws``, read by sccache itself); ``SCCACHE_REDIS_ENDPOINT`` for redis; ``SCCACHE_CONF`` for the
client configuration file that names an sccache-dist scheduler (``srcbuild.compiler_cache.dist``);
``SCCACHE_SERVER_UDS`` for the server's address. Each build's server listens on a Unix socket of
its own in its build directory instead of sccache's one TCP port (4226): a second build on the
machine, another user's included, neither stops this build's server nor finds the port taken.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

from srcbuild.compiler_cache.model import CacheStats, CompilerCacheConfig
from srcbuild.errors import StepFailed

DIST_CONFIG = "dist-client.toml"


def dist_config_path(config: CompilerCacheConfig) -> Path:
    assert config.local_dir is not None
    return Path(config.local_dir).parent / DIST_CONFIG


class Sccache:
    name = "sccache"

    def env(self, config: CompilerCacheConfig) -> list[tuple[str, str, str]]:
        out: list[tuple[str, str, str]] = []
        if config.local_dir:
            out.append(("SCCACHE_DIR", config.local_dir, "compiler cache: sccache's local directory"))
        if config.base_dir:
            out.append(("SCCACHE_BASEDIRS", config.base_dir, "the work dir: objects are shared across work dirs"))
        url = urlparse(config.url) if config.url else None
        origin = f"--compiler-cache-url {config.url}"
        if url is not None and url.scheme == "s3":
            out.append(("SCCACHE_BUCKET", url.netloc, origin))
            prefix = url.path.strip("/")
            if prefix:
                out.append(("SCCACHE_S3_KEY_PREFIX", prefix + "/", origin))
            out.append(("SCCACHE_REGION", config.region or "us-east-1", "AWS_REGION, else us-east-1"))
            if config.s3_endpoint:
                out.append(("SCCACHE_ENDPOINT", config.s3_endpoint, "SRCBUILD_S3_ENDPOINT_URL or AWS_ENDPOINT_URL"))
                ssl = "true" if config.s3_endpoint.startswith("https://") else "false"
                out.append(("SCCACHE_S3_USE_SSL", ssl, "the endpoint's scheme"))
        elif url is not None and url.scheme == "redis":
            out.append(("SCCACHE_REDIS_ENDPOINT", config.url or "", origin))
        if config.server:
            out.append(("SCCACHE_SERVER_UDS", config.server, "this build's own sccache server"))
        if config.dist_scheduler:
            out.append(("SCCACHE_CONF", str(dist_config_path(config)), f"--dist-scheduler {config.dist_scheduler}"))
        return out

    def start_argv(self, config: CompilerCacheConfig) -> list[list[str]]:
        launcher = config.launcher or "sccache"
        return [[launcher, "--start-server"], [launcher, "--zero-stats"]]

    def stop_argv(self, config: CompilerCacheConfig) -> list[str] | None:
        return [config.launcher or "sccache", "--stop-server"]

    def stats_argv(self, config: CompilerCacheConfig) -> list[str]:
        return [config.launcher or "sccache", "--show-stats", "--stats-format", "json"]

    def parse_stats(self, text: str) -> CacheStats:
        start = text.find("{")
        try:
            data = json.loads(text[start:]) if start >= 0 else None
            stats = data["stats"]  # type: ignore[index]

            def total(field: str) -> int:
                counts = (stats.get(field) or {}).get("counts") or {}
                return sum(int(v) for v in counts.values())

            dist = stats.get("dist_compiles") or {}
            return CacheStats(
                kind=self.name,
                hits=total("cache_hits"),
                misses=total("cache_misses"),
                requests=int(stats.get("compile_requests") or 0),
                distributed=sum(int(v) for v in dist.values()),
                location=str(data.get("cache_location") or ""),  # type: ignore[union-attr]
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            raise StepFailed(
                f"sccache --show-stats printed no statistics: {text.strip()[:200]}",
                "run `sccache --show-stats` by hand to see what sccache says",
            ) from None


SCCACHE = Sccache()
