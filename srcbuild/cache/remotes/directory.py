"""A shared directory (NFS or any mounted path) as a remote: the same layout as the local store.

Several machines may write at once: each entry is written by ``WheelCache.store`` (a staging
directory on the share, hashed on arrival, renamed into place) under the fingerprint's file lock.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import CacheEntry, WheelCache


def directory_from_url(url: str) -> Path:
    """``file:///mnt/share`` or ``/mnt/share`` -> a path."""
    if url.startswith("file://"):
        parsed = urlparse(url)
        return Path(unquote(parsed.netloc + parsed.path)).expanduser()
    return Path(url).expanduser()


class DirectoryRemote:
    """A wheel store on a shared filesystem."""

    writable = True

    def __init__(self, url: str) -> None:
        self.url = url
        self.root = directory_from_url(url).resolve()
        self._store: WheelCache | None = None

    @property
    def store(self) -> WheelCache:
        if self._store is None:
            self._store = WheelCache(self.root)
        return self._store

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        if not self.root.is_dir():
            return []
        entries = self.store.entries_for(fp) if fp else list(self.store.entries())
        return [e.manifest for e in entries]

    def fetch(self, manifest: Manifest, dest_dir: Path) -> tuple[Path, Path | None]:
        source = self.store.entry_dir(manifest)
        wheel = dest_dir / manifest.wheel
        shutil.copyfile(source / manifest.wheel, wheel)
        log = None
        if (source / "build.log").is_file():
            log = dest_dir / "build.log"
            shutil.copyfile(source / "build.log", log)
        return wheel, log

    def push(self, entry: CacheEntry) -> bool:
        existing = self.store.get(entry.manifest)
        if existing is not None and existing.manifest.sha256 == entry.manifest.sha256:
            return False
        with self.store.build_lock(entry.fingerprint):
            self.store.store(entry.wheel_path, entry.manifest, entry.log_path)
        return True
