"""A few files out of a Debian package, without unpacking the rest of it.

A ``.deb`` is an ``ar`` archive whose ``data.tar.*`` member holds the files; ``extract_members``
streams that tar once (xz, gzip or zstd-less formats Python's ``tarfile`` reads) and writes only
the members asked for, stopping as soon as all are out. ``dpkg-deb -x`` would write the whole
package: 2.8 GB for ``nvidia-cuda-dev``, of which a CUDA home needs three files.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

_MAGIC = b"!<arch>\n"
_HEADER = 60


class NotADeb(ValueError):
    """The file is not an ar archive with a data.tar member."""


def _data_member(handle: BinaryIO) -> tuple[str, int]:
    """Position ``handle`` at the start of the data.tar member; its name and size."""
    if handle.read(len(_MAGIC)) != _MAGIC:
        raise NotADeb("not an ar archive")
    while True:
        header = handle.read(_HEADER)
        if len(header) < _HEADER:
            raise NotADeb("no data.tar member")
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise NotADeb(f"a damaged ar header ({name!r})") from None
        if name.startswith("data.tar"):
            return name, size
        handle.seek(size + (size % 2), 1)


def extract_members(deb: Path, members: Sequence[str], dest: Path) -> tuple[str, ...]:
    """Write each of ``members`` (paths inside the package, ``usr/lib/...``) under ``dest`` at the
    same path; the members the package does not hold. Links and directories are not followed: a
    member must be a regular file."""
    import tarfile  # only when a package is unpacked: doctor and plan list this route without it

    wanted = {m.lstrip("./"): m for m in members}
    with deb.open("rb") as handle:
        _data_member(handle)
        try:
            with tarfile.open(fileobj=handle, mode="r|*") as tar:
                for info in tar:
                    key = info.name.lstrip("./")
                    if key not in wanted or not info.isfile():
                        continue
                    source = tar.extractfile(info)
                    if source is None:
                        continue
                    target = dest / key
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with target.open("wb") as out:
                        shutil.copyfileobj(source, out)
                    target.chmod(0o644)
                    del wanted[key]
                    if not wanted:
                        break
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise NotADeb(f"its data.tar cannot be read ({exc})") from None
    return tuple(wanted.values())
