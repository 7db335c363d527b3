"""The local wheel store: atomic writes, arch-aware lookup, a per-fingerprint build lock.

Layout under the root (the key contract is in ``srcbuild.cache.key``)::

    CACHEDIR.TAG                                   # backup tools skip the cache
    entries/<fp[:2]>/<fp>/<entry-key>/<wheel>.whl  # one directory per entry
                                      manifest.json
                                      manifest.json.sig  # when pulled signed (``signing``)
                                      build.log    # when the build had one
                                      stamp.json   # the wheel's file identity when last hashed
    locks/<fp>.lock                                # build_lock(fp)
    tmp/                                           # staging, on the same filesystem (``staging``)
    damaged/<entry-key>-<time>/                    # entries a lookup found damaged, moved aside

An entry appears by one ``os.rename`` of a finished staging directory, so a process killed in
the middle of a write leaves at most a staging directory that no lookup sees; the next process
that opens the store removes it (its writer's lock is gone).
A lookup reads only the directory of its fingerprint: its cost does not grow with the store.

A store serves only what it can vouch for: a lookup checks the wheel against its manifest's
sha256 before returning it, and moves a damaged entry aside with a warning, so it is a miss:
never installed, never built on. The check is a full re-hash unless the wheel's file identity is
the one ``stamp.json`` recorded when it was last hashed: device, inode, size, mtime and ctime, all
in nanoseconds where the filesystem has them. Size and mtime alone can be put back after an edit
(``touch -d``); the ctime cannot, since any write or ``utime`` sets it to the current time, and a
file replaced by another has another inode. So a hit at 500 MB costs a ``stat``, not a re-read,
and a wheel changed in any way since it was hashed is hashed again. ``store`` refuses a wheel that
contradicts the settings of its fingerprint (``wheelcheck``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from srcbuild.cache.ground import kind_of, plain_dir, plain_file
from srcbuild.cache.manifest import LOG_NAME, MANIFEST_NAME, Manifest
from srcbuild.cache.staging import clean_dead, staging_dir
from srcbuild.capability import ComputeCapability
from srcbuild.errors import CacheIntegrityError, UsageError, disk_full
from srcbuild.files import copy_synced, fsync_dir, sha256_file, write_atomic, write_synced
from srcbuild.files import identity as _identity
from srcbuild.records import record

__all__ = ["CacheEntry", "Manifest", "WheelCache", "serves"]

SIGNATURE_NAME = MANIFEST_NAME + ".sig"
STAMP_NAME = "stamp.json"
Warn = Callable[[str], None]
Refused = list[tuple[str, str]]  # (path below the root, why) of what a listing left out


def warn_stderr(message: str) -> None:
    """The default way a store reports what it skipped: one ``warning:`` line on stderr."""
    print(f"warning: {message}", file=sys.stderr, flush=True)

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by srcbuild.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)


def serves(manifest: Manifest, requested: Sequence[ComputeCapability]) -> bool:
    """Whether an entry runs on every requested compute capability (``verify.kernels.covers``)."""
    if not requested:
        return True
    from srcbuild.verify.kernels import covers

    kernels = manifest.kernels
    return all(covers(kernels, cc) for cc in requested)


@record
class CacheEntry:
    """One stored wheel: its directory and its manifest."""

    path: Path
    manifest: Manifest

    @property
    def wheel_path(self) -> Path:
        return self.path / self.manifest.wheel

    @property
    def log_path(self) -> Path | None:
        log = self.path / LOG_NAME
        return log if log.exists() else None

    @property
    def fingerprint(self) -> str:
        return self.manifest.fingerprint

    @property
    def key(self) -> str:
        return self.path.name

    @property
    def signature_path(self) -> Path | None:
        sig = self.path / SIGNATURE_NAME
        return sig if sig.is_file() else None

    def check_fast(self) -> None:
        """``check``, skipped when the wheel's file identity is the one recorded when it was last
        hashed (``stamp_for``: device, inode, size, mtime and ctime)."""
        try:
            st = os.stat(self.wheel_path)
            stamp = json.loads((self.path / STAMP_NAME).read_text(encoding="utf-8"))
            if (
                isinstance(stamp, dict)
                and st.st_size == self.manifest.size
                and stamp.get("identity") == _identity(st)
                and stamp.get("sha256") == self.manifest.sha256
            ):
                return
        except (OSError, ValueError):
            pass
        self.check()
        with contextlib.suppress(OSError):
            write_atomic(self.path / STAMP_NAME, stamp_for(self.wheel_path, self.manifest.sha256), mode=0o600)

    def check(self) -> None:
        """Re-hash the wheel; raise CacheIntegrityError when it is missing or differs from the manifest."""
        if not self.wheel_path.is_file():
            raise CacheIntegrityError(
                f"cache entry {self.key[:12]}: {self.manifest.wheel} is missing",
                "remove the entry with `srcbuild cache verify --remove`",
            )
        actual = sha256_file(self.wheel_path)
        if actual != self.manifest.sha256:
            raise CacheIntegrityError(
                f"cache entry {self.key[:12]}: {self.manifest.wheel} has sha256 {actual}, "
                f"the manifest says {self.manifest.sha256}",
                "the file is corrupt or was tampered with; remove it with `srcbuild cache verify --remove`",
            )


class WheelCache:
    """A wheel store rooted at ``root`` (created on first use, with ``CACHEDIR.TAG``)."""

    def __init__(self, root: Path, create: bool = True) -> None:
        """Open the store; ``create=False`` only reads (no directory, tag or cleanup is written)."""
        self.root = Path(root)
        if not create:
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tag = self.root / "CACHEDIR.TAG"
            if not tag.exists():
                write_atomic(tag, CACHEDIR_TAG.encode(), mode=0o600)
        except OSError as exc:
            raise UsageError(
                f"cannot use {self.root} as a wheel cache: {exc.strerror}",
                "choose a writable directory with --cache-dir or SRCBUILD_CACHE_DIR",
            ) from None
        self.clean_staging()

    def __repr__(self) -> str:
        return f"WheelCache({str(self.root)!r})"

    # -- layout ------------------------------------------------------------------------------
    @property
    def entries_dir(self) -> Path:
        return self.root / "entries"

    @property
    def staging_dir(self) -> Path:
        return self.root / "tmp"

    @property
    def damaged_dir(self) -> Path:
        return self.root / "damaged"

    def is_srcbuild_store(self) -> bool:
        """Whether ``root`` holds a srcbuild store (its ``CACHEDIR.TAG`` or its ``entries/``)."""
        try:
            tag = (self.root / "CACHEDIR.TAG").read_text(encoding="utf-8", errors="replace")[:512]
        except OSError:
            tag = ""
        return "created by srcbuild" in tag or self.entries_dir.is_dir()

    def staging(self, prefix: str) -> contextlib.AbstractContextManager[Path]:
        """A private staging directory on the store's filesystem (``staging.staging_dir``)."""
        plain_dir(self.root, self.staging_dir, create=True)
        return staging_dir(self.staging_dir, prefix)

    def fingerprint_dir(self, fp: str) -> Path:
        return self.entries_dir / fp[:2] / fp

    def entry_dir(self, manifest: Manifest) -> Path:
        return self.fingerprint_dir(manifest.fingerprint) / manifest.entry_key

    # -- reading -----------------------------------------------------------------------------
    def entries_for(self, fp: str, refused: Refused | None = None) -> list[CacheEntry]:
        """Every readable entry of fingerprint ``fp``, newest first (unreadable ones are skipped,
        and listed in ``refused`` when given). A link on the way to ``fp``'s directory is refused."""
        found = []
        if not plain_dir(self.root, self.fingerprint_dir(fp)):
            return []
        try:
            names = os.listdir(self.fingerprint_dir(fp))
        except OSError:
            return []
        for name in sorted(names):
            entry = self._read_entry(self.fingerprint_dir(fp) / name, refused)
            if entry is not None:
                found.append(entry)
        found.sort(key=lambda e: e.manifest.created, reverse=True)
        return found

    def get(self, manifest: Manifest) -> CacheEntry | None:
        """The stored entry with ``manifest``'s fingerprint and entry key, if readable (a link on
        the way to it is refused)."""
        plain_dir(self.root, self.entry_dir(manifest).parent)
        return self._read_entry(self.entry_dir(manifest))

    def lookup(
        self,
        fp: str,
        requested: Sequence[ComputeCapability],
        warn: Warn | None = warn_stderr,
        allow_modified: bool = False,
        fits: Callable[[Manifest], bool] | None = None,
    ) -> CacheEntry | None:
        """The newest intact entry of ``fp`` whose measured kernels serve every requested capability.

        An entry built from modified sources (``Manifest.modified``) is a candidate only with
        ``allow_modified``: a request names the clean tag. ``fits`` (``cache.fit.fits`` for the
        target machine) leaves out entries that cannot run there, so the newest that can is found.

        Each candidate's wheel is checked against its manifest (``CacheEntry.check_fast``); a
        damaged one is moved aside (``move_aside``) with a warning and the lookup goes on.
        """
        for entry in self.entries_for(fp):
            if not serves(entry.manifest, requested) or (entry.manifest.modified and not allow_modified):
                continue
            if fits is not None and not fits(entry.manifest):
                continue
            try:
                entry.check_fast()
            except CacheIntegrityError as exc:
                moved = self.move_aside(entry.path)
                if warn is not None:
                    where = f"moved aside to {moved}" if moved else "it could not be moved aside"
                    warn(f"{exc.message}; {where}, not used")
                continue
            return entry
        return None

    def move_aside(self, path: Path) -> Path | None:
        """Move a damaged entry to ``damaged/`` (kept for inspection, out of every lookup)."""
        plain_dir(self.root, path)
        plain_dir(self.root, self.damaged_dir, create=True)
        target = self.damaged_dir / f"{path.name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        try:
            os.rename(path, target)
        except OSError:
            return None
        with contextlib.suppress(OSError):  # drop empty fingerprint/shard directories
            path.parent.rmdir()
            path.parent.parent.rmdir()
        return target

    def entries(self, refused: Refused | None = None) -> Iterator[CacheEntry]:
        """Every readable entry in the store (what is left out is listed in ``refused`` when given)."""
        for entry_path in self._entry_paths(refused):
            entry = self._read_entry(entry_path, refused)
            if entry is not None:
                yield entry

    def damaged(self) -> Iterator[tuple[Path, str]]:
        """Entry directories whose manifest cannot be read, with the reason."""
        for entry_path in self._entry_paths():
            try:
                Manifest.read(entry_path / MANIFEST_NAME)
            except CacheIntegrityError as exc:
                yield entry_path, exc.message

    def find(self, ref: str) -> list[CacheEntry]:
        """Entries whose entry key or fingerprint starts with ``ref``, or whose wheel file is ``ref``."""
        ref = ref.strip()
        if not ref:
            return []
        return [
            e
            for e in self.entries()
            if e.manifest.wheel == ref or e.key.startswith(ref) or e.fingerprint.startswith(ref)
        ]

    def _entry_paths(self, refused: Refused | None = None) -> Iterator[Path]:
        """Every entry directory, walked with lstat: ``entries/`` itself a link is refused (the
        walk would leave the store); a link or a file among shards, fingerprints and entries is
        left out (and listed in ``refused``)."""
        return map(Path, self.entry_dirs(refused))

    def entry_dirs(self, refused: Refused | None = None) -> Iterator[str]:
        """``_entry_paths`` as strings (a listing of many entries builds no path objects)."""
        if not plain_dir(self.root, self.entries_dir):
            return
        root = str(self.root)
        for shard in self._plain_children(str(self.entries_dir), root, refused):
            for fp_dir in self._plain_children(shard, root, refused):
                yield from self._plain_children(fp_dir, root, refused)

    @staticmethod
    def _plain_children(directory: str, root: str, refused: Refused | None) -> list[str]:
        """The subdirectories of ``directory``, sorted; the type comes from the directory listing
        (lstat where the filesystem does not say), so a link is never followed."""
        try:
            with os.scandir(directory) as found:
                listed = sorted((child.name, child) for child in found)
        except OSError:
            return []
        children = []
        for _name, child in listed:
            try:
                is_dir = child.is_dir(follow_symlinks=False)
                is_link = not is_dir and child.is_symlink()
            except OSError:
                continue
            if is_dir:
                children.append(child.path)
            elif refused is not None:
                refused.append((os.path.relpath(child.path, root), _NOT_A_DIRECTORY[is_link]))
        return children

    def _below_root(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def _read_entry(self, path: Path, refused: Refused | None = None) -> CacheEntry | None:
        kind = kind_of(path)
        if kind != "dir":
            if refused is not None and kind is not None:
                refused.append((self._below_root(path), _NOT_A_DIRECTORY[kind == "link"]))
            return None
        try:
            return CacheEntry(path=path, manifest=Manifest.read(path / MANIFEST_NAME))
        except CacheIntegrityError as exc:
            if refused is not None:
                refused.append((self._below_root(path), exc.message))
            return None

    # -- writing -----------------------------------------------------------------------------
    def store(
        self, wheel: Path, manifest: Manifest, log: Path | None = None, signature: bytes | None = None
    ) -> CacheEntry:
        """Add ``wheel`` (stored as ``manifest.wheel``) under ``manifest``; atomic, verified on arrival, idempotent.

        The wheel is copied into a staging directory on the store's filesystem, hashed there
        (a copy that differs from ``manifest.sha256`` raises CacheIntegrityError and is
        discarded) and checked against the settings of its fingerprint (``wheelcheck``), then
        the directory is renamed into place. ``signature`` (a pulled entry's) is kept beside
        the manifest.
        """
        try:
            return self._store(wheel, manifest, log, signature)
        except OSError as exc:
            full = disk_full(exc, self.root)
            if full is not None:
                raise full from None
            raise

    def _store(self, wheel: Path, manifest: Manifest, log: Path | None, signature: bytes | None) -> CacheEntry:
        from srcbuild.cache.wheelcheck import check_settings

        final = self.entry_dir(manifest)
        existing = self._read_entry(final)
        if existing is not None and existing.manifest.sha256 == manifest.sha256:
            return existing
        with self.staging(f"{manifest.entry_key[:12]}-") as staging:
            target = staging / manifest.wheel
            copy_synced(wheel, target)
            arrived = sha256_file(target)
            if arrived != manifest.sha256:
                raise CacheIntegrityError(
                    f"{wheel.name}: sha256 {arrived} does not match the manifest's {manifest.sha256}",
                    "the wheel is corrupt or was changed after it was described; it was not stored",
                )
            check_settings(target, manifest)
            manifest = manifest.with_wheel(manifest.wheel, arrived, target.stat().st_size)
            if log is not None and log.is_file():
                copy_synced(log, staging / LOG_NAME)
            if signature is not None:
                write_synced(staging / SIGNATURE_NAME, signature)
            write_synced(staging / MANIFEST_NAME, manifest.dumps().encode("utf-8"))
            write_synced(staging / STAMP_NAME, stamp_for(target, arrived))
            if final.exists():  # damaged, or this key with another wheel (a non-reproducible rebuild)
                self._discard(final)
            plain_dir(self.root, final.parent, create=True)
            try:
                os.rename(staging, final)
            except OSError:
                winner = self._read_entry(final)  # another writer got there first
                if winner is None or winner.manifest.sha256 != manifest.sha256:
                    raise
                return winner
            fsync_dir(final.parent)
        return CacheEntry(path=final, manifest=manifest)

    @contextlib.contextmanager
    def build_lock(self, fp: str, timeout: float = -1) -> Iterator[None]:
        """Hold the lock of fingerprint ``fp``: concurrent builders of one key build once.

        The others block here; when they get the lock they should ``lookup`` again.
        """
        import filelock  # only a build takes the lock: a lookup or an install does not pay for it

        locks = self.root / "locks"
        plain_dir(self.root, locks, create=True)
        plain_file(locks / f"{fp}.lock")
        with filelock.FileLock(str(locks / f"{fp}.lock"), timeout=timeout):
            yield

    def remove(self, entry: CacheEntry) -> None:
        """Remove one entry: renamed out of sight first, then deleted."""
        self._discard(entry.path)

    def discard(self, path: Path) -> None:
        """Remove an entry directory (damaged ones too): renamed out of sight first, then deleted."""
        self._discard(path)

    def _discard(self, path: Path) -> None:
        if not plain_dir(self.root, path):
            return
        with self.staging("removed-") as trash:
            with contextlib.suppress(FileNotFoundError):
                os.rename(path, trash / "entry")
            shutil.rmtree(trash / "entry", ignore_errors=True)
        with contextlib.suppress(OSError):  # drop empty fingerprint/shard directories
            path.parent.rmdir()
            path.parent.parent.rmdir()

    def clean_staging(self) -> int:
        """Delete the staging directories of writers that are gone (killed, crashed); returns how many."""
        if not plain_dir(self.root, self.staging_dir):
            return 0
        return clean_dead(self.staging_dir)


_NOT_A_DIRECTORY = {True: "a symbolic link; not followed", False: "not a directory; left out"}


def stamp_for(wheel: Path, sha256: str) -> bytes:
    """The ``stamp.json`` of a wheel just hashed: its file identity (``_identity``) and the sha256
    it vouches for. A stamp of the older form (size and mtime only) never matches: that wheel is
    hashed once more and stamped again."""
    st = os.stat(wheel)
    return json.dumps({"identity": _identity(st), "sha256": sha256}).encode("utf-8")


