"""Moving entries between the local store and remotes, checking every wheel on arrival.

``pull_entry`` downloads into the store's staging area, hashes the file there and stores it only
when the sha256 matches the manifest: a corrupt or tampered wheel raises CacheIntegrityError and
is deleted, so it is never stored and never installed. ``push_entries`` re-hashes each local
entry before sending it (a damaged local wheel is not spread) and the remote checks its copy
again (the directory store hashes on arrival, S3 gets the checksum with the upload).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from srcbuild.cache.key import sha256_file
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes import CacheRemote
from srcbuild.cache.store import CacheEntry, WheelCache, serves
from srcbuild.capability import ComputeCapability
from srcbuild.errors import CacheIntegrityError, UsageError


@dataclass(frozen=True)
class Transfer:
    """What happened to one entry: "sent", "present" (already there), "fetched" or "rejected"."""

    action: str
    wheel: str
    entry_key: str
    remote: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "action": self.action,
            "wheel": self.wheel,
            "entry_key": self.entry_key,
            "remote": self.remote,
            "detail": self.detail,
        }


def pull_entry(cache: WheelCache, remote: CacheRemote, manifest: Manifest) -> CacheEntry:
    """Download one entry into ``cache``, verified by sha256; returns the stored entry."""
    present = cache.get(manifest)
    if present is not None and present.wheel_path.is_file():
        return present
    cache.staging_dir.mkdir(parents=True, exist_ok=True)
    download = Path(tempfile.mkdtemp(prefix="pull-", dir=cache.staging_dir))
    try:
        wheel, log = remote.fetch(manifest, download)
        arrived = sha256_file(wheel)
        if arrived != manifest.sha256:
            raise CacheIntegrityError(
                f"{manifest.wheel} from {remote.url}: sha256 {arrived} does not match the manifest's {manifest.sha256}",
                "the remote copy is corrupt or was tampered with; it was not stored — "
                "push a good copy again from the machine that built it",
            )
        return cache.store(wheel, manifest, log)
    finally:
        shutil.rmtree(download, ignore_errors=True)


def find_remote_entry(
    remotes: Iterable[CacheRemote], fp: str, requested: Sequence[ComputeCapability]
) -> tuple[CacheRemote, Manifest] | None:
    """The first remote (in order) with an entry of ``fp`` that serves ``requested``; its newest such."""
    for remote in remotes:
        candidates = [m for m in remote.manifests(fp) if m.fingerprint == fp and serves(m, requested)]
        if candidates:
            return remote, max(candidates, key=lambda m: m.created)
    return None


def pull_entries(cache: WheelCache, remote: CacheRemote, fp: str | None = None) -> list[Transfer]:
    """Copy every entry of ``remote`` (of fingerprint ``fp`` when given) that ``cache`` lacks."""
    results = []
    for manifest in remote.manifests(fp):
        if cache.get(manifest) is not None:
            results.append(Transfer("present", manifest.wheel, manifest.entry_key, remote.url))
            continue
        try:
            pull_entry(cache, remote, manifest)
        except CacheIntegrityError as exc:
            results.append(Transfer("rejected", manifest.wheel, manifest.entry_key, remote.url, exc.message))
            continue
        results.append(Transfer("fetched", manifest.wheel, manifest.entry_key, remote.url))
    return results


def push_entries(entries: Iterable[CacheEntry], remote: CacheRemote) -> list[Transfer]:
    """Send ``entries`` to ``remote``; each local wheel is re-hashed first."""
    if not remote.writable:
        raise UsageError(
            f"{remote.url} is an HTTP index and is read-only",
            "push to a directory or s3:// remote, or run `srcbuild cache index` on the serving machine",
        )
    results = []
    for entry in entries:
        try:
            entry.check()
        except CacheIntegrityError as exc:
            results.append(Transfer("rejected", entry.manifest.wheel, entry.key, remote.url, exc.message))
            continue
        sent = remote.push(entry)
        results.append(Transfer("sent" if sent else "present", entry.manifest.wheel, entry.key, remote.url))
    return results
