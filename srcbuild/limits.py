"""Bounds on what srcbuild reads from outside: sizes, time, decompression, and names used as files.

Everything a remote, an index page or a wheel says is data. This module owns the limits that keep
reading it cheap and the checks that keep a name from becoming a path:

* ``MAX_PAGE`` (an index page), ``MAX_MANIFEST``, ``MAX_SIGNATURE``, ``MAX_LOG`` and ``MAX_WHEEL``:
  no read holds or writes more; a wheel download may also not exceed the size its manifest states.
* ``READ_TIMEOUT``: every network read (a socket that says nothing for this long fails), and
  ``PAGE_DEADLINE``: a page or manifest that trickles in forever fails after this long in total.
* ``check_member``: a wheel member whose declared size is past ``MAX_MEMBER`` or that expands more
  than ``MAX_RATIO`` times (a zip bomb; real shared libraries deflate 3-5x) is refused before a
  byte of it is read. ``zipfile`` stops reading a member at its declared size and checks its CRC.
* ``check_expansion``: all members together may not expand past ``MAX_TOTAL_RATIO`` times the
  archive (above ``TOTAL_FLOOR``): many members each under the ratio are still a bomb together.
* ``safe_file_name``: a name from a manifest or a page must be a plain file name.
* ``open_regular``: a file on a share is read only when it is a regular file, not a symlink, a
  FIFO (which would block forever) or a device.
"""

from __future__ import annotations

import os
import re
import stat
import time
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, Protocol

from srcbuild.errors import CacheIntegrityError, HostError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

MAX_PAGE = 16 * MiB
MAX_MANIFEST = 4 * MiB
MAX_SIGNATURE = 64 * KiB
MAX_LOG = 256 * MiB
MAX_WHEEL = 16 * GiB
MAX_MEMBER = 16 * GiB
MAX_RATIO = 200  # uncompressed/compressed, checked for members over RATIO_FLOOR
RATIO_FLOOR = 16 * MiB
MAX_TOTAL_RATIO = 50  # all members together, over the archive's size; real wheels expand 2-5x
TOTAL_FLOOR = 256 * MiB  # below this a wheel may expand as it likes
MAX_VERSION_PY = 1 * MiB
MAX_LISTED = 100_000  # keys one S3 listing may return: far above any lab's cache, far below memory trouble

READ_TIMEOUT = 30.0
PAGE_DEADLINE = 120.0
CHUNK = 1 * MiB

_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def read_limited(stream: Readable, limit: int, what: str, deadline: float | None = PAGE_DEADLINE) -> bytes:
    """All of ``stream`` (at most ``limit`` bytes, within ``deadline`` seconds); HostError past either."""
    started = time.monotonic()
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise HostError(
                f"{what} is larger than {limit} bytes; not read", "check the remote: it is not a srcbuild cache"
            )
        chunks.append(chunk)
        if deadline is not None and time.monotonic() - started > deadline:
            raise HostError(f"{what} did not arrive within {deadline:.0f} s", "check the remote and the network")


def copy_limited(stream: Readable, out: BinaryIO, limit: int, what: str) -> int:
    """Copy ``stream`` into ``out``; CacheIntegrityError as soon as more than ``limit`` bytes arrive."""
    total = 0
    while True:
        chunk = stream.read(min(CHUNK, limit + 1 - total))
        if not chunk:
            return total
        total += len(chunk)
        if total > limit:
            raise CacheIntegrityError(
                f"{what} is larger than the {limit} bytes its manifest states; the download was stopped",
                "the remote copy is damaged or hostile; it was not stored",
            )
        out.write(chunk)


def check_member(info: zipfile.ZipInfo, wheel: str, limit: int = MAX_MEMBER) -> None:
    """Refuse a member too large, or compressed too well to be anything but a zip bomb."""
    if info.file_size > limit:
        raise CacheIntegrityError(
            f"{wheel}: member {info.filename} unpacks to {info.file_size} bytes, more than the limit of {limit}",
            "the wheel is damaged or hostile; rebuild it",
        )
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise CacheIntegrityError(
            f"{wheel}: member {info.filename} expands {info.file_size // max(info.compress_size, 1)} times "
            f"(more than {MAX_RATIO}): a zip bomb",
            "the wheel is damaged or hostile; rebuild it",
        )


def check_expansion(infos: Iterable[zipfile.ZipInfo], archive_size: int, wheel: str) -> None:
    """Refuse a wheel whose members together declare more than ``MAX_TOTAL_RATIO`` times its size."""
    total = sum(info.file_size for info in infos)
    limit = max(TOTAL_FLOOR, MAX_TOTAL_RATIO * archive_size)
    if total > limit:
        raise CacheIntegrityError(
            f"{wheel}: its members unpack to {total} bytes, {total // max(archive_size, 1)} times the "
            f"archive's {archive_size} (more than {MAX_TOTAL_RATIO} times past {TOTAL_FLOOR // MiB} MiB): a zip bomb",
            "the wheel is damaged or hostile; rebuild it",
        )


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, wheel: str, limit: int) -> bytes:
    """One member's bytes, bounded by ``limit`` and the bomb check; a bad CRC is CacheIntegrityError."""
    check_member(info, wheel, limit)
    try:
        with zf.open(info) as member:
            return member.read(limit + 1)[:limit]
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise CacheIntegrityError(
            f"{wheel}: member {info.filename} cannot be read ({exc})", "the wheel is damaged; rebuild it"
        ) from None


def safe_file_name(name: object, field: str, where: str) -> str:
    """``name`` when it is a plain file name (no separator, no ``..``, not absolute, no control character)."""
    if (
        not isinstance(name, str)
        or not name
        or len(name) > 255
        or name in (".", "..")
        or name.startswith(".")
        or any(c in name for c in "/\\")
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name)
    ):
        raise CacheIntegrityError(
            f"{where}: {field} {name!r} is not a plain file name", "the manifest is damaged or hostile; it is not used"
        )
    return name


def check_hex64(value: object, field: str, where: str) -> str:
    """``value`` when it is 64 lowercase hex digits (a sha256 or a fingerprint)."""
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise CacheIntegrityError(
            f"{where}: {field} {str(value)[:80]!r} is not a sha256 (64 hex digits)",
            "the manifest is damaged or hostile; it is not used",
        )
    return value


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file (no symlink, FIFO or device).

    FileNotFoundError when it is missing; CacheIntegrityError when it is something else.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if os.path.islink(path):
            raise CacheIntegrityError(
                f"{path} is a symbolic link; not read", "a cache holds plain files only"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CacheIntegrityError(f"{path} is not a regular file; not read", "a cache holds plain files only")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
