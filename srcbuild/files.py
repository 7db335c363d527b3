"""Files written whole or not at all, and their sha256: the leaf every package uses.

- ``sha256_file``: a file's sha256 (hex), read in 1 MiB blocks.
- ``write_atomic``: write into a temporary name in the target's
  directory, then rename it into place, so a reader sees the old file or the new one, never part
  of one. The temporary name is unique per writer and removed when the write fails. New files get
  ``mode`` (default 0o666, less the umask, like ``open``); ``sync`` flushes the data to disk
  before the rename.
- ``VerifiedFiles``: a file checked against a known sha256 once per file identity (device,
  inode, size, mtime and ctime), see the section at the end.
- ``write_synced`` / ``copy_synced`` / ``fsync_dir``: the pieces a writer that renames whole
  directories into place needs (``cache.store``).
- ``copy_hashed``: copy a file and hash the copy, so a copy out of a store is checked against the
  recorded sha256 on the bytes its reader gets.
- ``human_size``: a byte count in binary units (``1.5 KiB``), as ``--max-size`` reads them.

Precedent: cibuildwheel keeps its file helpers in one module (pypa/cibuildwheel:
cibuildwheel/util/file.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

_BLOCK = 1 << 20


def sha256_file(path: Path, chunk: int = _BLOCK) -> str:
    """The sha256 (hex) of the file at ``path``; ``OSError`` when it cannot be read."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def _temporary(path: Path, mode: int) -> tuple[Path, int]:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)


def write_atomic(path: Path, data: bytes | str, *, mode: int = 0o666, sync: bool = False) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` through a temporary name renamed into place."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp, fd = _temporary(path, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (in place) and flush it to disk."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def copy_synced(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` (in place) and flush it to disk."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, _BLOCK)
        fout.flush()
        os.fsync(fout.fileno())


def copy_hashed(src: Path, dst: Path) -> str:
    """Copy ``src`` to ``dst`` (``shutil.copy2``: the kernel copies the bytes) and return the
    sha256 of ``dst`` as written, read back once (from the page cache): the check covers the very
    bytes a reader of ``dst`` gets. bench/bench_cache_verify.py measured hashing while copying
    through Python instead: slower than the kernel's copy plus this one read."""
    shutil.copy2(src, dst)
    return sha256_file(dst)


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename into it) to disk; ignored where the system refuses."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def human_size(size: float) -> str:
    """``1536`` -> ``1.5 KiB``: binary units, one decimal, bytes whole."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


# -- checking a file against a known sha256 once per file identity -----------------------------
# Checking a file against a known sha256 once per file identity, not once per use.
#
# A file is re-read and hashed unless its identity is the one recorded right after it was last
# hashed and found to match: device, inode, size, mtime and ctime, in nanoseconds. Size and mtime
# can be put back after an edit (``touch -d``); the ctime cannot, since any write or ``utime``
# sets it to the current time, and a file replaced by another has another inode. So a second use
# costs one ``stat``, and a file changed in any way since is hashed again.
#
# The records (``VerifiedFiles``) are one JSON file, written atomically; a damaged or missing
# record only means the files are hashed again. The identity is taken before hashing and the
# record kept only when it is unchanged after, so a file written while it was read is not
# vouched for.


def identity(st: os.stat_result) -> list[int]:
    """Device, inode, size, mtime and ctime (ns) of a ``stat``."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class VerifiedFiles:
    """The identities of files found to match their sha256, kept in ``record`` (a JSON file)."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self.changed = False
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        self.known: dict[str, dict[str, object]] = data if isinstance(data, dict) else {}

    def matches(self, path: Path, sha256: str) -> bool:
        """Whether ``path`` (a regular file) holds bytes with ``sha256``: hashed unless its identity
        is the one recorded when it last matched that sha256."""
        key = os.fsdecode(os.path.abspath(path))
        try:
            before = identity(os.stat(path))
        except OSError:
            return False
        row = self.known.get(key)
        if isinstance(row, dict) and row.get("identity") == before and row.get("sha256") == sha256:
            return True
        try:
            digest = sha256_file(path)
            after = identity(os.stat(path))
        except OSError:
            return False
        if digest != sha256:
            if self.known.pop(key, None) is not None:
                self.changed = True
            return False
        if after == before:
            self.known[key] = {"identity": after, "sha256": sha256}
            self.changed = True
        return True

    def save(self) -> None:
        """Write the records when they changed (failures only cost a re-hash next time)."""
        if not self.changed:
            return
        try:
            self.record.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.record, json.dumps(self.known, sort_keys=True), mode=0o600)
        except OSError:
            return
        self.changed = False
