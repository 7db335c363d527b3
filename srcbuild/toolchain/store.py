"""The toolchains directory: provisioned prefixes, each complete or absent.

Layout (``Paths.toolchain_dir``, ``SRCBUILD_TOOLCHAIN_DIR``, default ``<work_dir>/toolchains``)::

    <name>-<version>-<provider>/          a prefix (e.g. cuda-11.8-debian/), shared by every recipe
    <name>-<version>-<provider>/.srcbuild-toolchain.json    its manifest, written last
    .locks/<key>.lock                     serialises the provisioning of one key
    .tmp/<key>.<pid>/                     a provisioning in progress, renamed into place when done
    .downloads/                           verified downloads (and ``.part`` files to resume)

A prefix without a manifest is half-made and never used; the next provisioning (or ``gc``) removes
it. Two processes that need the same key wait on its lock: the second finds the first's prefix.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srcbuild.files import write_atomic
from srcbuild.records import record
from srcbuild.toolchain.download import download_lock

if TYPE_CHECKING:  # the lock is loaded by what takes it: listing the store does not
    from filelock import FileLock

MANIFEST = ".srcbuild-toolchain.json"
FORMAT = "srcbuild-toolchain/1"


@record
class Source:
    """One file a prefix was made from."""

    url: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@record
class Provisioned:
    """What a provider made: the files it used and facts about the result (``nvcc``, ``gcc`` ...)."""

    sources: tuple[Source, ...] = ()
    facts: dict[str, str] = field(default_factory=dict)


@record
class Toolchain:
    """A complete prefix in the toolchains directory and its manifest."""

    name: str
    version: str
    provider: str
    prefix: Path
    sources: tuple[Source, ...]
    size: int
    created: str
    facts: dict[str, str]

    @property
    def key(self) -> str:
        return toolchain_key(self.name, self.version, self.provider)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "provider": self.provider,
            "prefix": str(self.prefix),
            "size": self.size,
            "created": self.created,
            "sources": [s.to_json() for s in self.sources],
            "facts": dict(self.facts),
        }


def toolchain_key(name: str, version: str, provider: str) -> str:
    return f"{name}-{version}-{provider}"


def tree_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def rmtree(path: Path) -> None:
    """Remove a tree, including read-only files some installers leave."""
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or path.is_file():
        path.unlink()
        return
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chmod(os.path.join(root, name), 0o700)
        shutil.rmtree(path)


def _read_manifest(prefix: Path) -> Toolchain | None:
    try:
        data = json.loads((prefix / MANIFEST).read_text(encoding="utf-8"))
        return Toolchain(
            name=str(data["name"]),
            version=str(data["version"]),
            provider=str(data["provider"]),
            prefix=prefix,
            sources=tuple(Source(str(s["url"]), str(s["sha256"]), int(s["size"])) for s in data.get("sources", [])),
            size=int(data.get("size", 0)),
            created=str(data.get("created", "")),
            facts={str(k): str(v) for k, v in data.get("facts", {}).items()},
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


@record
class GcReport:
    removed: tuple[Path, ...]
    freed: int


@record
class ToolchainStore:
    """Find, make (atomically, once), list and remove provisioned toolchains."""

    root: Path

    @property
    def downloads(self) -> Path:
        return self.root / ".downloads"

    @property
    def _tmp(self) -> Path:
        return self.root / ".tmp"

    @property
    def _locks(self) -> Path:
        return self.root / ".locks"

    def prefix_for(self, name: str, version: str, provider: str) -> Path:
        return self.root / toolchain_key(name, version, provider)

    def lock(self, key: str) -> FileLock:
        from filelock import FileLock

        self._locks.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self._locks / f"{key}.lock"))

    def entries(self) -> list[Toolchain]:
        """Every complete prefix, sorted by name and version."""
        if not self.root.is_dir():
            return []
        found = [_read_manifest(p) for p in sorted(self.root.iterdir()) if p.is_dir() and not p.name.startswith(".")]
        return [t for t in found if t is not None]

    def find(self, name: str, version: str, provider: str | None = None) -> Toolchain | None:
        """A complete prefix of ``name`` whose version is ``version`` or starts with ``version.``."""
        for entry in self.entries():
            if entry.name != name or (provider is not None and entry.provider != provider):
                continue
            if entry.version == version or entry.version.startswith(version + "."):
                return entry
        return None

    def ensure(
        self,
        name: str,
        version: str,
        provider: str,
        create: Callable[[Path, Path], Provisioned],
    ) -> tuple[Toolchain, bool]:
        """Return (toolchain, reused): the existing prefix, or one ``create(target, final)`` makes.

        ``create`` fills ``target`` (a temp dir), which is renamed to ``final`` when it returns; the
        manifest is written last. On any failure (Ctrl-C included) nothing is left behind.
        """
        key = toolchain_key(name, version, provider)
        final = self.root / key
        with self.lock(key):
            existing = _read_manifest(final)
            if existing is not None:
                return existing, True
            for stale in sorted(self._tmp.glob(f"{key}.*")) if self._tmp.is_dir() else ():
                rmtree(stale)  # a provisioning whose process died
            rmtree(final)  # half-made: no manifest
            self._tmp.mkdir(parents=True, exist_ok=True)
            target = self._tmp / f"{key}.{os.getpid()}"
            target.mkdir()
            try:
                made = create(target, final)
                manifest = {
                    "format": FORMAT,
                    "name": name,
                    "version": version,
                    "provider": provider,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "size": tree_size(target),
                    "sources": [s.to_json() for s in made.sources],
                    "facts": dict(made.facts),
                }
                write_atomic(target / MANIFEST, json.dumps(manifest, indent=2) + "\n")
                os.rename(target, final)
            except BaseException:
                rmtree(target)
                raise
        made_entry = _read_manifest(final)
        assert made_entry is not None
        return made_entry, False

    def remove(self, name: str, version: str, provider: str | None = None) -> list[Path]:
        """Delete the prefixes of ``name`` ``version`` (every provider unless one is given)."""
        removed = []
        for entry in self.entries():
            if entry.name != name or entry.version != version:
                continue
            if provider is not None and entry.provider != provider:
                continue
            with self.lock(entry.key):
                rmtree(entry.prefix)
            removed.append(entry.prefix)
        return removed

    def gc(self) -> GcReport:
        """Remove half-made prefixes, abandoned temp dirs, partial downloads nobody is writing, and
        downloads a complete prefix was already made from (its manifest keeps their sha256)."""
        from filelock import FileLock

        removed: list[Path] = []
        freed = 0
        if not self.root.is_dir():
            return GcReport((), 0)
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") or not path.is_dir() or _read_manifest(path) is not None:
                continue
            with self.lock(path.name):
                if _read_manifest(path) is None:
                    freed += tree_size(path)
                    rmtree(path)
                    removed.append(path)
        for path in sorted(self._tmp.iterdir()) if self._tmp.is_dir() else ():
            key = path.name.rsplit(".", 1)[0]
            lock = self.lock(key)
            try:
                lock.acquire(timeout=0)
            except TimeoutError:
                continue  # being provisioned right now
            try:
                freed += tree_size(path)
                rmtree(path)
                removed.append(path)
            finally:
                lock.release()
        for part in sorted(self.downloads.glob("*.part")) if self.downloads.is_dir() else ():
            lock = FileLock(str(download_lock(part.with_suffix(""))))
            try:
                lock.acquire(timeout=0)
            except TimeoutError:
                continue
            try:
                freed += part.stat().st_size
                part.unlink()
                removed.append(part)
            finally:
                lock.release()
        consumed = {source.sha256 for entry in self.entries() for source in entry.sources if source.sha256}
        for download in sorted(self.downloads.iterdir()) if self.downloads.is_dir() else ():
            if download.is_file() and download.name.split("-", 1)[0] in consumed:
                freed += download.stat().st_size
                download.unlink()
                removed.append(download)
        return GcReport(tuple(removed), freed)
