"""The store's listing index: what ``cache ls``, ``gc`` and ``show`` need of every entry, kept parsed.

Listing a store of 10,000 entries read and checked 10,000 manifests (about 1 ms each). The index
keeps, per entry directory, a summary of its manifest (``EntrySummary``: package, version, recipe,
kernels, size, age, wheel, keys) in ``index.sqlite`` at the store's root, beside the stat of what
it was made from: the entry directory's mtime (a file added, removed or renamed into it changes
it), the manifest's and the wheel's inode, size, mtime and ctime. A listing still walks the
entry directories (lstat only, as ``WheelCache.entries`` does: links are refused the same way)
and stats those three paths; an entry whose stat matches its row is not read again, any other
is read and checked as before (``Manifest.read``) and its row rewritten. Rows of entries that are
gone are dropped. So the index can never show what the store does not hold: it is a cache of
parsed manifests, rebuilt from them when it is missing, damaged (any SQLite error) or of another
layout version, and each listing corrects it.

Rows are written only for entries whose stat is older than ``SETTLED_SECONDS`` (a change in the
same clock tick as the row would otherwise go unseen), and only into an index file this user
owns and no one else can write (``_trusted``): another user's index is never read, a store of
another user's gets none, and a listing that cannot write it still reads every manifest.
Lookups, installs and pulls never use the index: they read their fingerprint's manifests and
check the wheel's sha256 themselves.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from pathlib import Path

from srcbuild.cache.manifest import MANIFEST_NAME
from srcbuild.cache.store import CacheEntry, Refused, WheelCache
from srcbuild.records import record

INDEX_NAME = "index.sqlite"
LAYOUT_VERSION = 2  # PRAGMA user_version: a file of another layout is rebuilt
SETTLED_SECONDS = 2.0


@record
class EntrySummary:
    """What a listing shows of one entry, and the keys that find it."""

    location: str  # the entry directory
    key: str  # the entry key (the directory's name)
    fingerprint: str
    package: str
    version: str
    recipe: str
    wheel: str
    sass: tuple[int, ...]
    ptx: tuple[int, ...]
    cuda: str  # the key's CUDA release; "" for a CPU build
    created: float
    size: int  # bytes of every file in the entry directory
    wheel_size: int  # bytes of the wheel, as its manifest says
    modified: bool

    @property
    def path(self) -> Path:
        return Path(self.location)

    @classmethod
    def of(cls, entry: CacheEntry, size: int) -> EntrySummary:
        m = entry.manifest
        return cls(
            location=str(entry.path),
            key=entry.key,
            fingerprint=m.fingerprint,
            package=m.package,
            version=m.version,
            recipe=m.recipe_name,
            wheel=m.wheel,
            sass=tuple(m.sass),
            ptx=tuple(m.ptx),
            cuda=str(m.key_inputs.get("cuda") or ""),
            created=m.created,
            size=size,
            wheel_size=m.size,
            modified=bool(m.modified),
        )

    def to_row(self) -> str:
        return json.dumps(
            [
                self.key,
                self.fingerprint,
                self.package,
                self.version,
                self.recipe,
                self.wheel,
                list(self.sass),
                list(self.ptx),
                self.cuda,
                self.created,
                self.size,
                self.wheel_size,
                self.modified,
            ]
        )

    @classmethod
    def from_row(cls, location: str, row: str) -> EntrySummary:
        key, fp, package, version, recipe, wheel, sass, ptx, cuda, created, size, wheel_size, modified = json.loads(row)
        return cls(
            location,
            str(key),
            str(fp),
            str(package),
            str(version),
            str(recipe),
            str(wheel),
            tuple(int(s) for s in sass),
            tuple(int(p) for p in ptx),
            str(cuda),
            float(created),
            int(size),
            int(wheel_size),
            bool(modified),
        )


def entry_size(path: Path) -> int:
    """Bytes of the regular files in an entry directory (links and directories are not counted)."""
    total = 0
    with contextlib.suppress(OSError), os.scandir(path) as found:
        for child in found:
            with contextlib.suppress(OSError):
                if child.is_file(follow_symlinks=False):
                    total += child.stat(follow_symlinks=False).st_size
    return total


def _stamp(path: str, wheel_name: str | None) -> tuple[str, float] | None:
    """The stat a row is valid for, and the newest mtime in it (None: the manifest is missing)."""
    try:
        d = os.lstat(path)
        m = os.lstat(f"{path}/{MANIFEST_NAME}")
    except OSError:
        return None
    parts = [str(d.st_mtime_ns), *_file_stat(m)]
    newest = max(d.st_mtime_ns, m.st_mtime_ns, m.st_ctime_ns)
    if wheel_name is not None:
        try:
            w = os.lstat(f"{path}/{wheel_name}")
        except OSError:
            return None
        parts += _file_stat(w)
        newest = max(newest, w.st_mtime_ns, w.st_ctime_ns)
    return ":".join(parts), newest / 1e9


def _file_stat(st: os.stat_result) -> list[str]:
    kind = "f" if stat.S_ISREG(st.st_mode) else "x"
    return [kind, str(st.st_ino), str(st.st_size), str(st.st_mtime_ns), str(st.st_ctime_ns)]


class ListingIndex:
    """The index of one store (``summaries`` is all a caller needs)."""

    def __init__(self, cache: WheelCache) -> None:
        self.cache = cache
        self.path = cache.root / INDEX_NAME

    def summaries(self, refused: Refused | None = None) -> list[EntrySummary]:
        """Every readable entry, newest first (what is left out is listed in ``refused``)."""
        known = self._load()
        found: list[EntrySummary] = []
        seen: set[str] = set()
        changed: dict[str, tuple[str, str, str]] = {}
        settled = time.time() - SETTLED_SECONDS
        skip = len(str(self.cache.root)) + 1
        for location in self.cache.entry_dirs(refused):
            rel = location[skip:]
            seen.add(rel)
            row = known.get(rel)
            if row is not None:
                wheel, stamp_then, summary = row
                now = _stamp(location, wheel)
                if now is not None and now[0] == stamp_then:
                    try:
                        found.append(EntrySummary.from_row(location, summary))
                        continue
                    except (ValueError, TypeError):  # a row of another shape: the manifest is read again
                        pass
            entry_path = Path(location)
            entry = self.cache._read_entry(entry_path, refused)
            if entry is None:
                continue
            summary_of = EntrySummary.of(entry, entry_size(entry_path))
            found.append(summary_of)
            stamp = _stamp(location, entry.manifest.wheel)
            if stamp is not None and stamp[1] < settled:
                changed[rel] = (entry.manifest.wheel, stamp[0], summary_of.to_row())
        gone = [rel for rel in known if rel not in seen]
        if changed or gone:
            self._save(changed, gone, rebuild=not known)
        found.sort(key=lambda s: s.created, reverse=True)
        return found

    def entry(self, summary: EntrySummary) -> CacheEntry | None:
        """The entry a summary names, its manifest read and checked now."""
        return self.cache._read_entry(summary.path)

    # -- the file ----------------------------------------------------------------------------
    def _trusted(self) -> bool:
        """Whether the index file may be read and written: a plain file this user owns that no one
        else can write (or none yet, in a root this user owns). Another user's file, even in a
        group-writable root, is never read: only its owner can make a file that passes."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            try:
                root = os.stat(self.cache.root)
            except OSError:
                return False
            return root.st_uid == os.getuid()
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022

    def _load(self) -> dict[str, tuple[str, str, str]]:
        """path -> (wheel, stamp, row); empty when there is no index or it cannot be trusted or read."""
        if not self._trusted() or not self.path.exists():
            return {}
        import sqlite3

        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5)
            try:
                if db.execute("PRAGMA user_version").fetchone()[0] != LAYOUT_VERSION:
                    return {}
                rows = db.execute("SELECT path, wheel, stamp, row FROM entries").fetchall()
            finally:
                db.close()
        except sqlite3.Error:  # damaged, locked for long, another layout: rebuilt by this listing
            return {}
        return {str(p): (str(w), str(s), str(r)) for p, w, s, r in rows}

    def _save(self, changed: dict[str, tuple[str, str, str]], gone: list[str], rebuild: bool) -> None:
        """Write ``changed`` rows and drop ``gone`` ones (``rebuild``: start the table anew)."""
        if not self._trusted():
            return
        import sqlite3

        try:
            db = sqlite3.connect(str(self.path), timeout=5, isolation_level=None)
        except sqlite3.Error:
            return
        try:
            os.chmod(self.path, 0o600)
            db.execute("BEGIN IMMEDIATE")
            if rebuild or db.execute("PRAGMA user_version").fetchone()[0] != LAYOUT_VERSION:
                db.execute("DROP TABLE IF EXISTS entries")
                db.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")
            db.execute("CREATE TABLE IF NOT EXISTS entries (path TEXT PRIMARY KEY, wheel TEXT, stamp TEXT, row TEXT)")
            db.executemany("DELETE FROM entries WHERE path = ?", ((p,) for p in gone))
            db.executemany(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
                ((p, w, s, r) for p, (w, s, r) in changed.items()),
            )
            db.execute("COMMIT")
        except sqlite3.DatabaseError:  # not a database, or damaged: removed, written anew next time
            db.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            return
        except (sqlite3.Error, OSError):  # locked by another listing, a read-only store: not kept
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        db.close()


def summaries(cache: WheelCache, refused: Refused | None = None) -> list[EntrySummary]:
    """Every readable entry of ``cache``, newest first, through its listing index."""
    return ListingIndex(cache).summaries(refused)


def find(cache: WheelCache, ref: str) -> list[CacheEntry]:
    """Entries whose entry key or fingerprint starts with ``ref``, or whose wheel file is ``ref``
    (``WheelCache.find`` through the index: only the matches' manifests are read)."""
    ref = ref.strip()
    if not ref:
        return []
    index = ListingIndex(cache)
    matches = [
        s for s in index.summaries() if s.wheel == ref or s.key.startswith(ref) or s.fingerprint.startswith(ref)
    ]
    return [e for e in (index.entry(s) for s in matches) if e is not None]


__all__ = ["EntrySummary", "ListingIndex", "entry_size", "find", "summaries"]
