"""Finding programs and files on a machine whose root directory and environment are injected.

Every probe looks things up through these functions, so a test can point srcbuild at a fixture
tree (``root``) with a fixture ``PATH`` instead of this machine's.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Optional

# A program runner with the signature of ``srcbuild.proc.probe``: output, or None when it failed.
Runner = Callable[..., Optional[str]]
Which = Callable[[str], Optional[Path]]


def which_in(environ: Mapping[str, str]) -> Which:
    """``shutil.which`` over the injected environment's PATH (empty PATH: nothing is found)."""
    path_env = environ.get("PATH", "")

    def which(name: str) -> Path | None:
        found = shutil.which(name, path=path_env) if path_env else None
        return Path(found) if found else None

    return which


def path_dirs(environ: Mapping[str, str]) -> list[Path]:
    return [Path(p) for p in environ.get("PATH", "").split(":") if p]


def under(root: Path, absolute: str) -> Path:
    """``/usr/local/cuda`` inside ``root``."""
    return root / absolute.lstrip("/")


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def is_executable(path: Path) -> bool:
    return path.is_file() and shutil.which(path.name, path=str(path.parent)) is not None


def unique_paths(paths: Sequence[Path]) -> list[Path]:
    """Drop later duplicates (same file after following links), keeping the first spelling."""
    seen: set[Path] = set()
    out = []
    for path in paths:
        try:
            key = path.resolve()
        except OSError:
            key = path
        if key in seen:
            continue
        seen.add(key)
        out.append(path)
    return out
