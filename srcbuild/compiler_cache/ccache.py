"""ccache as the compiler launcher, with its remote storage (ccache 4.4+).

``CCACHE_REMOTE_STORAGE`` points it at a shared store (``redis://host:port`` or an HTTP server,
ccache docs "Remote storage backends"). ccache keeps its counters in its cache directory across
builds, so the counters before the build are subtracted from those after (``--print-stats``:
one ``name<TAB>value`` line each); nothing is zeroed.
"""

from __future__ import annotations

from srcbuild.compiler_cache.model import CacheStats, CompilerCacheConfig


class Ccache:
    name = "ccache"

    def env(self, config: CompilerCacheConfig) -> list[tuple[str, str, str]]:
        out = []
        if config.base_dir:
            out.append(("CCACHE_BASEDIR", config.base_dir, "the work dir: objects are shared across work dirs"))
        if config.url:
            out.append(("CCACHE_REMOTE_STORAGE", config.url, f"--compiler-cache-url {config.url}"))
        return out

    def start_argv(self, config: CompilerCacheConfig) -> list[list[str]]:
        return []

    def stop_argv(self, config: CompilerCacheConfig) -> list[str] | None:
        return None

    def stats_argv(self, config: CompilerCacheConfig) -> list[str]:
        return [config.launcher or "ccache", "--print-stats"]

    def parse_stats(self, text: str) -> CacheStats:
        values: dict[str, int] = {}
        for line in text.splitlines():
            name, _, value = line.partition("\t")
            if value.strip().isdigit():
                values[name.strip()] = int(value)
        hits = values.get("direct_cache_hit", 0) + values.get("preprocessed_cache_hit", 0)
        misses = values.get("cache_miss", 0)
        return CacheStats(kind=self.name, hits=hits, misses=misses, requests=hits + misses)


CCACHE = Ccache()
