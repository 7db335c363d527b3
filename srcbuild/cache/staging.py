"""Staging directories that know whether their writer is alive.

Every write into a store (a build's wheel, a pull, a push to a shared directory, a removal)
happens in ``<root>/tmp/<name>/`` and ends with one rename. Each staging directory has a lock
file beside it, ``<root>/tmp/<name>.lock``, that its writer holds (``flock``) for as long as it
works there; the kernel releases the lock when the writer dies, however it dies. So the next
process that opens the store removes every staging directory whose lock nobody holds: what a
killed transfer left is gone on the next run, not after a day, and a live writer is never touched.

Order matters against races: a writer takes its lock before it creates the directory, and checks
that the lock file it holds is still the one on disk (a cleaner may have just removed it); a
cleaner removes the directory before the lock file.

On a share (NFS) locks may be local to each machine (``nolock`` mounts), so each name ends with
``@<host>``: a cleaner removes another machine's staging directory only when, besides its lock
being free, it has not changed for ``FOREIGN_STALE_SECONDS``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_SUFFIX = ".lock"
FOREIGN_STALE_SECONDS = 24 * 3600


def host_tag() -> str:
    """This machine's name as it appears in staging names (letters, digits, ``.`` and ``-`` only)."""
    import socket  # here: a cache hit reads and names nothing staged

    return "".join(c if c.isalnum() or c in ".-" else "-" for c in socket.gethostname())[:64] or "host"


def _ours_or_stale(path: Path) -> bool:
    """Whether a staging entry belongs to this machine, or is old enough to be dead wherever it was made."""
    if "@" not in path.name or path.name.rsplit("@", 1)[1] == host_tag():
        return True
    try:
        return time.time() - path.lstat().st_mtime >= FOREIGN_STALE_SECONDS
    except OSError:
        return False


def _try_lock(path: Path, strict: bool = False) -> int | None:
    """An fd holding an exclusive lock on ``path`` (created if missing), or None when someone holds it
    or it cannot be opened (``strict``: that OSError is raised, e.g. a full disk)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:  # ELOOP: a link in place of a lock file is never followed
        if strict:
            raise
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return None
        raise
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


@contextlib.contextmanager
def staging_dir(parent: Path, prefix: str) -> Iterator[Path]:
    """A fresh directory under ``parent``, locked while the block runs, removed afterwards if still there."""
    parent.mkdir(parents=True, exist_ok=True)
    while True:
        name = f"{prefix}{os.getpid()}-{secrets.token_hex(6)}@{host_tag()}"
        lock = parent / (name + LOCK_SUFFIX)
        fd = _try_lock(lock, strict=True)
        if fd is None:
            continue
        if not _same_file(fd, lock):  # a cleaner removed it between our open and our lock
            os.close(fd)
            continue
        path = parent / name
        try:
            path.mkdir()
        except FileExistsError:
            os.close(fd)
            continue
        break
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(fd)


def clean_dead(parent: Path) -> int:
    """Remove the staging directories (and lock files) under ``parent`` whose writer is gone; how many."""
    try:
        names = os.listdir(parent)
    except OSError:
        return 0
    removed = 0
    for name in sorted(names):
        if name.endswith(LOCK_SUFFIX):
            continue
        path = parent / name
        if not _ours_or_stale(path):
            continue  # another machine's, maybe alive: its lock may not be visible from here
        lock = parent / (name + LOCK_SUFFIX)
        fd = _try_lock(lock)
        if fd is None:
            continue  # its writer is alive
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
            removed += 1
            with contextlib.suppress(OSError):
                lock.unlink()
        finally:
            os.close(fd)
    for name in names:  # lock files of writers that died before creating their directory
        if not name.endswith(LOCK_SUFFIX) or (parent / name[: -len(LOCK_SUFFIX)]).exists():
            continue
        lock = parent / name
        if not _ours_or_stale(parent / name[: -len(LOCK_SUFFIX)]) and not _ours_or_stale(lock):
            continue
        fd = _try_lock(lock)
        if fd is None:
            continue
        try:
            if _same_file(fd, lock):
                with contextlib.suppress(OSError):
                    lock.unlink()
        finally:
            os.close(fd)
    return removed
