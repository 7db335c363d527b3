"""The compiler cache's data: the resolved configuration of one build, its counters, and the
interface each program (``ccache``, ``sccache``) implements."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from srcbuild.records import record

ABSTRACT_SOCKET = "\\x00"  # how sccache's SCCACHE_SERVER_UDS names a Linux abstract socket


@record
class CompilerCacheConfig:
    """The resolved compiler cache of one build; ``kind`` "none" means no launcher."""

    kind: str = "none"
    launcher: str | None = None  # absolute path of the sccache/ccache program
    url: str | None = None  # shared store: s3://bucket/prefix, redis://host:port, http(s)://...
    dist_scheduler: str | None = None  # sccache-dist scheduler URL
    local_dir: str | None = None  # the local cache directory srcbuild gives sccache
    base_dir: str | None = None  # the work dir: paths below it are hashed relative to it
    s3_endpoint: str | None = None  # an S3-compatible server (moto, MinIO)
    region: str | None = None
    source: str = "default"
    server: str | None = None  # sccache's server socket (SCCACHE_SERVER_UDS): one per build

    @property
    def server_file(self) -> Path | None:
        """The socket file of this build's server; None without one or for an abstract socket."""
        return Path(self.server) if self.server and not self.server.startswith(ABSTRACT_SOCKET) else None

    @property
    def enabled(self) -> bool:
        return self.kind != "none" and self.launcher is not None

    def label(self) -> str:
        """``sccache (s3://bucket/prefix)``, ``ccache``, ``off``."""
        if not self.enabled:
            return "off"
        where = [w for w in (self.url, f"dist {self.dist_scheduler}" if self.dist_scheduler else None) if w]
        return f"{self.kind} ({', '.join(where)})" if where else self.kind


@record
class CacheStats:
    """What the compiler cache did during one build."""

    kind: str
    hits: int
    misses: int
    requests: int = 0  # compile requests the launcher saw
    distributed: int = 0  # compiles that ran on sccache-dist build servers
    location: str = ""

    def minus(self, before: CacheStats | None) -> CacheStats:
        if before is None:
            return self
        return CacheStats(
            self.kind,
            max(0, self.hits - before.hits),
            max(0, self.misses - before.misses),
            max(0, self.requests - before.requests),
            max(0, self.distributed - before.distributed),
            self.location,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "hits": self.hits,
            "misses": self.misses,
            "requests": self.requests,
            "distributed": self.distributed,
            "location": self.location,
        }

    def summary(self) -> str:
        dist = f", {self.distributed} distributed" if self.distributed else ""
        return f"{self.kind}: {self.hits} hit(s), {self.misses} miss(es){dist}"


class CompilerCacheKind(Protocol):
    """One compiler cache program (see the module docstring)."""

    name: str

    def env(self, config: CompilerCacheConfig) -> list[tuple[str, str, str]]:
        """(variable, value, origin) that point the launcher at its store; no credentials."""
        ...

    def start_argv(self, config: CompilerCacheConfig) -> list[list[str]]:
        """Commands run before the build (sccache: a server with this build's settings)."""
        ...

    def stats_argv(self, config: CompilerCacheConfig) -> list[str]: ...

    def parse_stats(self, text: str) -> CacheStats: ...

    def stop_argv(self, config: CompilerCacheConfig) -> list[str] | None: ...
