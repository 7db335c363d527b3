"""A shared directory (NFS or any mounted path) as a remote: the same layout as the local store.

Several machines may write at once: each entry is written by ``WheelCache.store`` (a staging
directory on the share, hashed on arrival, renamed into place) under the fingerprint's file lock.
Reading (``manifests``, ``fetch``, a pull) writes nothing into the share: it is opened with
``WheelCache(root, create=False)``. Names come from the share's manifests, which ``Manifest``
checks are plain file names; every copy is bounded by the size the manifest states.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlparse

from srcbuild.cache.ground import plain_dir
from srcbuild.cache.manifest import LOG_NAME, Manifest
from srcbuild.cache.store import SIGNATURE_NAME, CacheEntry, WheelCache
from srcbuild.errors import CacheIntegrityError, HostError, NotFoundError, PushConflict, UsageError, disk_full
from srcbuild.limits import CHUNK, MAX_LOG, MAX_SIGNATURE, MAX_WHEEL, open_regular


def directory_from_url(url: str) -> Path:
    """``file:///mnt/share`` or ``/mnt/share`` -> a path."""
    if url.startswith("file://"):
        parsed = urlparse(url)
        return Path(unquote(parsed.netloc + parsed.path)).expanduser()
    return Path(url).expanduser()


def _tag_in_writing(name: str) -> bool:
    """Whether ``name`` is the temporary name ``write_atomic`` gives a ``CACHEDIR.TAG`` on its way."""
    return name.startswith(".CACHEDIR.TAG.") and name.endswith(".tmp")


class DirectoryRemote:
    """A wheel store on a shared filesystem."""

    writable = True

    def __init__(self, url: str) -> None:
        self.url = url
        self.root = directory_from_url(url).resolve()
        self._store: WheelCache | None = None
        self.reader = WheelCache(self.root, create=False)
        self.refused: list[tuple[str, str]] = []  # (entry, why) the last listing left out

    @property
    def store(self) -> WheelCache:
        """The share opened for writing (created, tagged and cleaned on first use)."""
        if self._store is None:
            self._store = WheelCache(self.root)
        return self._store

    def check(self, for_push: bool = False) -> None:
        """UsageError unless the directory exists and is a srcbuild store (or, to push into, empty);
        a remote to read from that does not exist is NotFoundError (exit 9)."""
        if not self.root.is_dir():
            raise (UsageError if for_push else NotFoundError)(
                f"remote {self.url}: no such directory",
                f"create it first with `mkdir -p {self.root}`, or check the path" if for_push else "check the path",
            )
        if self.reader.is_srcbuild_store():
            for part in ("tmp", "entries", "locks", "damaged"):  # a link among them is refused
                plain_dir(self.root, self.root / part)
            return
        try:
            # another srcbuild may be creating the store this moment: its tag's temporary name
            # (``write_atomic``) is there before the tag itself
            empty = all(_tag_in_writing(e.name) for e in os.scandir(self.root))
        except OSError as exc:
            raise UsageError(f"remote {self.url}: cannot read ({exc.strerror})", "check its permissions") from None
        if not (for_push and empty):
            raise UsageError(
                f"remote {self.url}: not a srcbuild cache (no CACHEDIR.TAG from srcbuild, no entries/)",
                "point --remote at a directory that `srcbuild cache push` wrote",
            )

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        if not self.root.is_dir():
            return []
        self.refused = []
        entries = self.reader.entries_for(fp, self.refused) if fp else list(self.reader.entries(self.refused))
        return [e.manifest for e in entries]

    def signature(self, manifest: Manifest) -> bytes | None:
        plain_dir(self.root, self.reader.entry_dir(manifest))
        path = self.reader.entry_dir(manifest) / SIGNATURE_NAME
        try:
            with open_regular(path) as handle:
                data = handle.read(MAX_SIGNATURE + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HostError(f"{path}: cannot read ({exc.strerror})", "check the share") from None
        return data if len(data) <= MAX_SIGNATURE else None

    def fetch(self, manifest: Manifest, wheel_to: Path, log_to: Path) -> bool:
        source = self.reader.entry_dir(manifest)
        plain_dir(self.root, source)
        limit = manifest.size or MAX_WHEEL
        try:
            fin = open_regular(source / manifest.wheel)
        except FileNotFoundError:
            raise CacheIntegrityError(
                f"{manifest.wheel} from {self.url}: the wheel is missing",
                "push it again from the machine that built it",
            ) from None
        except OSError as exc:
            raise HostError(f"{source}: cannot read ({exc.strerror})", "check the share") from None
        with fin:
            _copy_out(fin, wheel_to, limit, f"{manifest.wheel} from {self.url}", source)
        try:
            log = open_regular(source / LOG_NAME)
        except (OSError, CacheIntegrityError):
            return False
        with log:
            try:
                _copy_out(log, log_to, MAX_LOG, f"the build log of {manifest.wheel}", source)
            except CacheIntegrityError:
                with contextlib.suppress(OSError):
                    log_to.unlink()
                return False
        return True

    def push(self, entry: CacheEntry, signature: bytes | None = None) -> bool:
        existing = self.store.get(entry.manifest)
        if (
            existing is not None
            and existing.manifest.sha256 == entry.manifest.sha256
            and (signature is None or existing.signature_path is not None)
        ):
            return False
        with self.store.build_lock(entry.fingerprint):
            existing = self.store.get(entry.manifest)  # again, under the lock: another push may have won
            if existing is not None and existing.manifest.sha256 != entry.manifest.sha256:
                raise PushConflict(
                    f"{self.url}: entry {entry.key[:12]} already holds another wheel (sha256 "
                    f"{existing.manifest.sha256[:16]}..., this push's is {entry.manifest.sha256[:16]}...); refused",
                    "two builds of the same inputs made different bytes, or two machines pushed at once; "
                    f"to replace the shared copy, delete {existing.path} and push again",
                )
            if existing is not None and existing.manifest.sha256 == entry.manifest.sha256:
                if signature is None or existing.signature_path is not None:
                    return False  # the same bytes arrived meanwhile
                self.store.discard(existing.path)  # re-stored below with its signature
            self.store.store(entry.wheel_path, entry.manifest, entry.log_path, signature)
        return True


def _copy_out(fin: BinaryIO, to: Path, limit: int, what: str, source: Path) -> None:
    """Copy a file of the share to this machine: a read error is the share's, a write error ours
    (a full disk shows at a write, or only when the last buffered bytes are flushed at the close)."""
    try:
        with open(to, "wb") as fout:
            _copy_chunks(fin, fout, limit, what, source)
    except OSError as exc:
        full = disk_full(exc, to)
        raise full or HostError(f"{to}: cannot write ({exc.strerror})", "check the cache directory") from None


def _copy_chunks(fin: BinaryIO, fout: BinaryIO, limit: int, what: str, source: Path) -> None:
    total = 0
    while True:
        try:
            chunk = fin.read(min(CHUNK, limit + 1 - total))
        except OSError as exc:
            raise HostError(f"{source}: cannot read ({exc.strerror})", "check the share") from None
        if not chunk:
            return
        total += len(chunk)
        if total > limit:
            raise CacheIntegrityError(
                f"{what} is larger than the {limit} bytes its manifest states; the download was stopped",
                "the remote copy is damaged or hostile; it was not stored",
            )
        fout.write(chunk)
