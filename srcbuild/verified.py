"""Checking a file against a known sha256 once per file identity, not once per use.

A file is re-read and hashed unless its identity is the one recorded right after it was last
hashed and found to match: device, inode, size, mtime and ctime, in nanoseconds. Size and mtime
can be put back after an edit (``touch -d``); the ctime cannot, since any write or ``utime``
sets it to the current time, and a file replaced by another has another inode. So a second use
costs one ``stat``, and a file changed in any way since is hashed again.

The records (``VerifiedFiles``) are one JSON file, written atomically; a damaged or missing
record only means the files are hashed again. The identity is taken before hashing and the
record kept only when it is unchanged after, so a file written while it was read is not
vouched for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from srcbuild.files import sha256_file, write_atomic


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
