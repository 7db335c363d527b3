"""What the work directory holds, and cleaning it: ``srcbuild work ls`` / ``srcbuild work clean``.

The work directory (``Paths.work_dir``) holds, per recipe, a checkout (``src/<recipe>/``), build
state and logs (``builds/<recipe>-<package>/``) and an environment (``envs/<key>``, linked from
``envs/<recipe>-py<version>``); shared by all recipes, the git object cache (``git-objects/``),
provisioned toolchains (``toolchains/``) and srcbuild's own logs (``logs/``). ``scan`` lists them
with their size and last use (the newest modification time inside); ``select`` picks what to
clean, purely. The shared ones are listed but never cleaned here: ``srcbuild toolchain gc``
owns the toolchains, and the git object cache makes the next checkout of any tag cheap.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from srcbuild.errors import UsageError
from srcbuild.packages import package_names
from srcbuild.paths import Paths
from srcbuild.records import record

CLEANABLE = ("checkout", "build", "environment")
_AGE = re.compile(r"^(\d+)([smhdw])\Z")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@record
class WorkItem:
    """One thing in the work directory."""

    kind: str  # checkout, build, environment, git objects, toolchain, logs
    path: Path
    recipe: str | None
    size: int
    last_used: float  # seconds since the epoch

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "path": str(self.path),
            "recipe": self.recipe,
            "size": self.size,
            "last_used": self.last_used,
        }


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``2w`` → seconds."""
    m = _AGE.match(text.strip())
    if not m:
        raise UsageError(f"--older-than {text!r} is not an age", "write it like 30d, 12h or 2w")
    return int(m.group(1)) * _UNIT[m.group(2)]


def _usage(path: Path) -> tuple[int, float]:
    """Bytes under ``path`` (links not followed) and the newest modification time."""
    size, newest = 0, 0.0
    try:
        st = path.lstat()
    except OSError:
        return 0, 0.0
    size, newest = st.st_size, st.st_mtime
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                try:
                    st = os.lstat(os.path.join(root, name))
                except OSError:
                    continue
                size += st.st_size if name in files else 0
                newest = max(newest, st.st_mtime)
    return size, newest


def _recipe_of_build(name: str) -> str:
    for suffix in sorted((f"-{name}" for name in package_names()), key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _children(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir()) if directory.is_dir() else []


def scan(paths: Paths) -> list[WorkItem]:
    """Everything the work directory holds, one item per checkout, build, environment, ..."""
    items: list[WorkItem] = []

    def add(kind: str, path: Path, recipe: str | None) -> None:
        size, last = _usage(path)
        items.append(WorkItem(kind, path, recipe, size, last))

    for recipe_dir in _children(paths.sources_dir):
        if recipe_dir.is_dir():
            add("checkout", recipe_dir, recipe_dir.name)
    for build in _children(paths.builds_dir):
        if build.is_dir():
            add("build", build, _recipe_of_build(build.name))
    links: dict[Path, str] = {}
    for entry in _children(paths.envs_dir):
        if entry.is_symlink():
            links.setdefault(entry.resolve(), entry.name.rsplit("-py", 1)[0])
    for entry in _children(paths.envs_dir):
        if entry.is_dir() and not entry.is_symlink():
            add("environment", entry, links.get(entry.resolve()))
    for entry in _children(paths.git_cache_dir):
        add("git objects", entry, None)
    for entry in _children(paths.toolchain_dir):
        add("toolchain", entry, None)
    if paths.logs_dir.is_dir():
        add("logs", paths.logs_dir, None)
    return items


def select(
    items: Iterable[WorkItem], now: float, older_than: float | None = None, recipe: str | None = None
) -> list[WorkItem]:
    """The cleanable items (checkouts, builds, environments) unused for ``older_than`` seconds
    and of ``recipe``, when given."""
    chosen = []
    for item in items:
        if item.kind not in CLEANABLE:
            continue
        if recipe is not None and item.recipe != recipe:
            continue
        if older_than is not None and now - item.last_used < older_than:
            continue
        chosen.append(item)
    return chosen


def remove(items: Sequence[WorkItem], paths: Paths) -> None:
    """Delete ``items`` (and the environment links that point at a removed environment)."""
    removed = {item.path.resolve() for item in items}
    for item in items:
        shutil.rmtree(item.path, ignore_errors=True)
    for entry in _children(paths.envs_dir):
        if entry.is_symlink() and (entry.resolve() in removed or not entry.exists()):
            entry.unlink()


def age_label(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def now() -> float:
    return time.time()
