"""Environment prefixes srcbuild owns: where they live, when one is complete, how one is made safely.

Layout (``<work_dir>/envs/``): ``<key>/`` is an environment, ``key`` the first 16 hex digits of its
spec hash. ``<key>/.srcbuild-env.json`` (the marker) is written last and holds the full hash: a
prefix without a matching marker is half-made and is never used. ``.<key>.lock`` serialises
creation; ``.<key>.tmp-<pid>/`` is a creation in progress (renamed into place when complete) and is
removed by the next run if its creator died. ``.pkgs/`` is the package cache, ``.repodata/`` the
channel index cache and ``.downloads/`` verified remote package files.

``BuildEnv`` is what the build uses: the prefix, its Python and ``bin/``, and the environment
changes that put them first (PATH, CMAKE_PREFIX_PATH, CONDA_PREFIX or VIRTUAL_ENV, and CC/CXX when the
environment brings its own compiler).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srcbuild.envmods import EnvChanges
from srcbuild.errors import UsageError
from srcbuild.files import write_atomic
from srcbuild.records import record

if TYPE_CHECKING:
    from filelock import FileLock

MARKER = ".srcbuild-env.json"


@record
class BuildEnv:
    """A ready environment: everything the build step needs to use it."""

    prefix: Path
    python: Path
    bin_dir: Path
    env_changes: EnvChanges = field(default_factory=EnvChanges)
    backend: str = "existing"
    spec_hash: str | None = None
    reused: bool = False  # True when an existing complete environment was used as is
    seconds: float = 0.0  # time ensure() took

    @classmethod
    def conda_prefix(
        cls, prefix: Path, backend: str, spec_hash: str, with_compiler: bool, reused: bool, started: float
    ) -> BuildEnv:
        """A conda-layout prefix made (or reused) by ``backend``; ``started`` is a time.monotonic() value."""
        return cls(
            prefix=prefix,
            python=prefix / "bin" / "python",
            bin_dir=prefix / "bin",
            env_changes=env_changes_for(prefix, "conda", with_compiler),
            backend=backend,
            spec_hash=spec_hash,
            reused=reused,
            seconds=time.monotonic() - started,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "prefix": str(self.prefix),
            "python": str(self.python),
            "bin_dir": str(self.bin_dir),
            "backend": self.backend,
            "spec_hash": self.spec_hash,
            "reused": self.reused,
            "seconds": round(self.seconds, 3),
            "env": self.env_changes.to_json(),
        }


def compiler_changes(prefix: Path) -> EnvChanges:
    """CC/CXX pointing at the environment's own gcc/g++ (conda compiler packages), if it has them."""
    bin_dir = prefix / "bin"
    changes = EnvChanges()
    for var, plain, suffix in (("CC", "gcc", "-gcc"), ("CXX", "g++", "-g++")):
        candidates = [bin_dir / plain] if (bin_dir / plain).is_file() else []
        candidates += sorted(p for p in bin_dir.glob(f"*-linux-gnu{suffix}") if p.is_file())
        if candidates:
            changes = changes.set(var, str(candidates[0]), "conda compiler package in the build environment")
    return changes


def env_changes_for(prefix: Path, kind: str, with_compiler: bool) -> EnvChanges:
    origin = f"build environment ({kind})"
    changes = EnvChanges().prepend("PATH", str(prefix / "bin"), origin)
    changes = changes.prepend("CMAKE_PREFIX_PATH", str(prefix), origin)
    if kind == "venv":
        changes = changes.set("VIRTUAL_ENV", str(prefix), origin)
    else:
        changes = changes.set("CONDA_PREFIX", str(prefix), origin)
    if with_compiler:
        changes = changes.extend(compiler_changes(prefix))
    return changes


def existing_env(prefix: Path) -> BuildEnv:
    """An environment the user made (``--env PREFIX``): a conda environment or a venv."""
    prefix = Path(prefix).expanduser().resolve()
    if not prefix.is_dir():
        raise UsageError(f"--env {prefix}: no such directory", "give the prefix of a conda environment or a venv")
    if (prefix / "conda-meta").is_dir():
        kind = "conda"
    elif (prefix / "pyvenv.cfg").is_file():
        kind = "venv"
    else:
        raise UsageError(
            f"--env {prefix} is neither a conda environment (no conda-meta/) nor a venv (no pyvenv.cfg)",
            "give the prefix of an environment, or leave out --env to let srcbuild make one",
        )
    python = prefix / "bin" / "python"
    if not python.exists():
        raise UsageError(f"--env {prefix} has no bin/python", "install Python into that environment first")
    return BuildEnv(
        prefix=prefix,
        python=python,
        bin_dir=prefix / "bin",
        env_changes=env_changes_for(prefix, kind, with_compiler=True),
        backend=f"existing {kind}",
    )


def read_marker(prefix: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((prefix / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(prefix: Path, spec_hash: str, must_match: Mapping[str, Any] | None = None) -> bool:
    """A marker for this spec hash, which also records each ``must_match`` value (e.g. the packages)."""
    marker = read_marker(prefix)
    if marker is None or marker.get("spec_hash") != spec_hash:
        return False
    return all(marker.get(k) == v for k, v in (must_match or {}).items())


def _rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():  # read-only files left by an installer
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chmod(os.path.join(root, name), 0o700)
        shutil.rmtree(path)


@record
class EnvStore:
    """The ``envs`` directory: find, create atomically, remove."""

    root: Path

    def prefix_for(self, key: str) -> Path:
        return self.root / key

    @property
    def package_cache(self) -> Path:
        return self.root / ".pkgs"

    @property
    def repodata_cache(self) -> Path:
        return self.root / ".repodata"

    @property
    def downloads(self) -> Path:
        return self.root / ".downloads"

    def lock(self, key: str) -> FileLock:
        self.root.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock  # here: a plan names environments without locking them

        return FileLock(str(self.root / f".{key}.lock"))

    def leftovers(self, key: str) -> list[Path]:
        return sorted(self.root.glob(f".{key}.tmp-*"))

    def ensure(
        self,
        key: str,
        spec_hash: str,
        create: Callable[[Path, Path], Mapping[str, Any] | None],
        finish: Callable[[Path], None] | None = None,
        relocatable: bool = True,
        marker_extra: Mapping[str, Any] | None = None,
        must_match: Mapping[str, Any] | None = None,
    ) -> tuple[Path, bool]:
        """Return (prefix, reused).

        A complete environment whose marker has ``spec_hash`` (and every ``must_match`` value) is
        reused untouched. Otherwise ``create(target, final)`` builds it in ``target`` (a temp dir
        renamed to ``final`` afterwards when ``relocatable``; else ``final`` itself) and may return
        values for the marker; ``finish(final)`` runs in place (pip installs); the marker is
        written last.
        """
        final = self.prefix_for(key)
        with self.lock(key):
            if is_complete(final, spec_hash, must_match):
                return final, True
            for stale in self.leftovers(key):  # a creation that was killed
                _rmtree(stale)
            if final.exists():  # half-made (no marker) or another spec with a colliding key
                _rmtree(final)
            target = self.root / f".{key}.tmp-{os.getpid()}" if relocatable else final
            try:
                recorded = create(target, final) or {}
                if relocatable:
                    os.rename(target, final)
                if finish is not None:
                    finish(final)
            except BaseException:
                _rmtree(target)
                if relocatable and final.exists() and not is_complete(final, spec_hash):
                    _rmtree(final)
                raise
            marker = {"spec_hash": spec_hash, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            marker.update(marker_extra or {})
            marker.update(recorded)
            write_atomic(final / MARKER, json.dumps(marker, indent=2, sort_keys=True) + "\n")
        return final, False

    def remove(self, key: str) -> bool:
        """Delete one environment (and leftovers of its creation); True if anything was there."""
        with self.lock(key):
            found = False
            for path in [self.prefix_for(key), *self.leftovers(key)]:
                if path.exists():
                    _rmtree(path)
                    found = True
        (self.root / f".{key}.lock").unlink(missing_ok=True)
        return found

    def entries(self) -> list[tuple[Path, dict[str, Any] | None]]:
        if not self.root.is_dir():
            return []
        return [(p, read_marker(p)) for p in sorted(self.root.iterdir()) if p.is_dir() and not p.name.startswith(".")]

    def remove_all(self) -> list[Path]:
        removed = []
        for path, _ in self.entries():
            self.remove(path.name)
            removed.append(path)
        for cache in (self.package_cache, self.repodata_cache, self.downloads):
            if cache.exists():
                _rmtree(cache)
        for stale in self.root.glob(".*.tmp-*") if self.root.is_dir() else ():
            _rmtree(stale)
        return removed
