"""A store's own directories are plain directories: srcbuild never follows a link inside a store.

A shared directory is written by every machine that pushes to it, so anyone with write access may
replace its ``tmp/``, an ``entries/<shard>`` or a ``locks/<fp>.lock`` with a symbolic link. Were
such a link followed, cleaning the staging area would delete the link's target, a push would write
an entry wherever the link points, and a pull would walk the whole filesystem.

So before srcbuild writes, renames, deletes or lists anything below a store's root it checks each
component of the path below the root with ``lstat``: a symbolic link (or anything that is not a
directory where a directory belongs) is refused with one line naming it (CacheIntegrityError,
exit 7). The root itself is resolved once when the store is opened, so a cache that is itself a
link to another disk works; only links *inside* it are refused.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from srcbuild.errors import CacheIntegrityError

HINT = (
    "a store's tmp/, entries/, locks/ and damaged/ hold plain directories and files; remove the link, "
    "or point srcbuild at the store's real directory"
)


def refused(path: Path, what: str) -> CacheIntegrityError:
    """The error for a path inside a store that is not what the layout puts there."""
    return CacheIntegrityError(f"{path} {what}; srcbuild does not follow links inside a cache", HINT)


def kind_of(path: Path) -> str | None:
    """``"link"``, ``"dir"``, ``"file"``, ``"other"``, or None when nothing is there (never follows a link)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return "other"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def plain_dir(root: Path, path: Path, create: bool = False) -> bool:
    """Whether ``path`` (below ``root``) exists, every component below ``root`` checked with lstat.

    ``create`` makes the missing components (each one checked again after it is made). A symbolic
    link or a non-directory on the way raises CacheIntegrityError naming it.
    """
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise refused(path, f"is outside the store {root}") from None
    current = root
    for part in parts:
        current = current / part
        kind = kind_of(current)
        if kind is None:
            if not create:
                return False
            with contextlib.suppress(FileExistsError):
                os.mkdir(current)
            kind = kind_of(current)
        if kind == "link":
            raise refused(current, "is a symbolic link")
        if kind != "dir":
            raise refused(current, "is not a directory")
    return True


def plain_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (False when missing); a link or anything else is refused."""
    kind = kind_of(path)
    if kind is None:
        return False
    if kind == "link":
        raise refused(path, "is a symbolic link")
    if kind != "file":
        raise refused(path, "is not a regular file")
    return True
