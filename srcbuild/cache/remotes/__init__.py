"""Shared wheel stores behind one interface, looked up by URL scheme.

=================================  ==============================  =========
remote                             module                          push/pull
=================================  ==============================  =========
``/mnt/share/srcbuild``, file://   ``remotes.directory``            both
``s3://bucket/prefix``             ``remotes.s3`` (boto3)           both
``http://host:port/``, https://    ``remotes.http`` (PEP 503 index)  pull
``upload+http://host:port/``       ``remotes.upload`` (twine)       push
=================================  ==============================  =========

A remote only moves bytes, manifests and signatures; ``srcbuild.cache.transfer`` checks each
entry's signature (``signing``) and every wheel's sha256 when it arrives, so no remote is trusted.
Every S3 remote, whoever opens it (``cache``, ``install``, a build's lookup), gets its endpoint
from ``RemoteOptions.resolve``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Callable, Protocol
from urllib.parse import urlparse

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.netlimits import NetLimits
from srcbuild.cache.store import CacheEntry
from srcbuild.errors import UsageError
from srcbuild.precedence import Chosen, env_value, from_cli, from_env, precedence
from srcbuild.records import record


@record
class RemoteOptions:
    """Settings a remote may need, resolved once from the command line and the environment."""

    s3_endpoint_url: str | None = None
    s3_endpoint_origin: str = "default"  # "command line --s3-endpoint-url", "environment AWS_ENDPOINT_URL", ...
    net: NetLimits = field(default_factory=NetLimits)  # bounds of every HTTP remote's traffic (``netio``)
    # the environment a remote's own tool runs with (twine reads its TWINE_* credentials there)
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def resolve(cls, s3_endpoint_url: str | None = None, *, environ: Mapping[str, str]) -> RemoteOptions:
        """``--s3-endpoint-url`` > ``SRCBUILD_S3_ENDPOINT_URL`` > ``AWS_ENDPOINT_URL``; the network
        limits from ``SRCBUILD_NET_*`` (``netio.NetLimits.resolve``)."""
        endpoint: Chosen[str | None] = precedence(
            Chosen(None, "default"),
            from_env(environ, "SRCBUILD_S3_ENDPOINT_URL", str),
            from_cli(s3_endpoint_url or None, "--s3-endpoint-url"),
        )
        return cls(s3_endpoint_url=endpoint.value, s3_endpoint_origin=endpoint.origin, net=NetLimits.resolve(environ),
                   environ=dict(environ))


class CacheRemote(Protocol):
    """A place other machines share wheels through."""

    url: str
    writable: bool
    # (entry, why) of what the last ``manifests()`` left out: hostile, damaged or unreadable
    # entries, which a pull reports as warnings (never silently skipped)
    refused: list[tuple[str, str]]

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        """The manifests of the remote's entries (of fingerprint ``fp`` only, when given)."""
        ...

    def signature(self, manifest: Manifest) -> bytes | None:
        """The entry's manifest signature (``signing``), or None when it has none."""
        ...

    def fetch(self, manifest: Manifest, wheel_to: Path, log_to: Path) -> bool:
        """Download the entry's wheel to ``wheel_to`` (at most ``manifest.size`` bytes; not yet
        verified) and its build log to ``log_to``; False when it has no log."""
        ...

    def push(self, entry: CacheEntry, signature: bytes | None = None) -> bool:
        """Upload a local entry (with its signature); False when the remote already has it."""
        ...

    def check(self, for_push: bool = False) -> None:
        """Raise UsageError unless the remote exists and is a srcbuild cache (``for_push``: may be new)."""
        ...


RemoteFactory = Callable[[str, RemoteOptions], CacheRemote]


def _directory(url: str, options: RemoteOptions) -> CacheRemote:
    from srcbuild.cache.remotes.directory import DirectoryRemote

    return DirectoryRemote(url)


def _s3(url: str, options: RemoteOptions) -> CacheRemote:
    from srcbuild.cache.remotes.s3 import S3Remote

    return S3Remote(url, endpoint_url=options.s3_endpoint_url, endpoint_origin=options.s3_endpoint_origin)


def _http(url: str, options: RemoteOptions) -> CacheRemote:
    from srcbuild.cache.remotes.http import HttpIndexRemote

    return HttpIndexRemote(url, options.net)


def _upload(url: str, options: RemoteOptions) -> CacheRemote:
    from srcbuild.cache.remotes.upload import UploadIndexRemote

    return UploadIndexRemote(url, options.environ, options.net)


REMOTE_KINDS: dict[str, RemoteFactory] = {
    "file": _directory,
    "s3": _s3,
    "http": _http,
    "https": _http,
    "upload+http": _upload,
    "upload+https": _upload,
}


def open_remote(url: str, options: RemoteOptions | None = None) -> CacheRemote:
    """The remote for ``url``: a directory path, ``file://``, ``s3://``, ``http(s)://`` or
    ``upload+http(s)://`` (an index that accepts uploads)."""
    options = options or RemoteOptions()
    url = url.strip()
    if any(ord(c) < 0x20 for c in url):
        raise UsageError(f"remote {url!r} holds a control character", "pass the remote's URL or path alone")
    try:
        scheme = urlparse(url).scheme.lower() if "://" in url else ""
    except ValueError as exc:
        raise UsageError(f"remote {url!r} is not a valid URL ({exc})", "write it like http://host:port/") from None
    if not scheme:
        if not url:
            raise UsageError("empty remote", "pass a directory, file://, s3://bucket/prefix or http://host:port/")
        return _directory(url, options)
    factory = REMOTE_KINDS.get(scheme)
    if factory is None:
        valid = ", ".join(f"{s}://" for s in REMOTE_KINDS)
        raise UsageError(
            f"unknown remote scheme {scheme!r} in {url}",
            f"use a directory path or one of: {valid}",
        )
    try:
        return factory(url, options)
    except ValueError as exc:  # urllib: "Invalid IPv6 URL", a bad port
        raise UsageError(f"remote {url!r} is not a valid URL ({exc})", "write it like http://host:port/") from None


def parse_remotes(values: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """``--remote`` values, then ``SRCBUILD_REMOTES`` (separated by os.pathsep or commas)."""
    urls = [v for v in values if v.strip()]
    raw = env_value(environ, "SRCBUILD_REMOTES") or ""
    if raw:
        for chunk in raw.split(","):
            # s3:// and http:// contain ':', so split on os.pathsep only outside URLs
            urls.extend(_split_pathsep(chunk))
    return list(dict.fromkeys(u.strip() for u in urls if u.strip()))


def _split_pathsep(text: str) -> list[str]:
    if "://" not in text:
        return [p for p in text.split(os.pathsep) if p]
    parts: list[str] = []
    for piece in text.split(os.pathsep):
        if parts and (piece.startswith("//") or (piece and not _looks_like_start(piece))):
            parts[-1] = parts[-1] + os.pathsep + piece
        elif piece:
            parts.append(piece)
    return parts


def _looks_like_start(piece: str) -> bool:
    return piece.startswith(("/", ".", "~")) or piece.split("/", 1)[0] in REMOTE_KINDS
