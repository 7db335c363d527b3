"""What the build itself wrote into a checkout, so that anything else there counts as modified.

Untracked files anywhere in the checkout, the tree's ignored output directories included
(``build/``, ``torch/lib/``), reach the wheel as surely as an edited source file. A file there is
the build's only when a step that writes the checkout (``Step.writes_checkout``: the patches,
the build-tree check, the canary, the build, the retag) left it so. The executor calls ``before_writing`` and
``after_writing`` around each such step; the record is ``<checkout>/.git/srcbuild-written.json``::

    {"files": {"build/CMakeCache.txt": [dev, ino, size, mtime_ns, ctime_ns], ...},
     "foreign": ["torch/lib/libx.so", ...],
     "open": false}

``files`` is every untracked file (at any depth, submodules included; ``.git`` entries left out)
as the last writing step left it, each with its file identity (``srcbuild.files.identity``: a
write or a ``touch`` changes the ctime, which cannot be put back). ``before_writing`` adds to
``foreign`` every untracked file that is not in ``files`` with the same identity: something
other than the build put it there or changed it since (a hand edit between a failed build and
``--resume``). A foreign path stays foreign until the checkout is made again, even after the
build overwrites or deletes it, because it may already have been compiled in.

``open`` is true while a writing step runs. A run killed so hard that ``after_writing`` never ran
(SIGKILL, a power cut; Ctrl-C and failures do record) leaves it true, and what that step wrote
cannot be told from a hand change: the next ``before_writing`` counts those files as foreign, so
such a resume is cached as modified (remove the checkout to build it clean).

``foreign_files`` is what ``srcbuild.sources.localdiff.local_changes`` adds to a checkout's
modifications: the recorded foreign paths and every untracked file now unlike the record.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from srcbuild import proc
from srcbuild.errors import StepFailed
from srcbuild.files import identity, write_atomic

RECORD = "srcbuild-written.json"


def _record_path(checkout: Path) -> Path:
    return checkout / ".git" / RECORD


def _load(checkout: Path) -> tuple[dict[str, list[int]], set[str], bool]:
    try:
        data = json.loads(_record_path(checkout).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, set(), False
    if not isinstance(data, dict):
        return {}, set(), False
    files = data.get("files")
    foreign = data.get("foreign")
    return (
        {str(k): v for k, v in files.items() if isinstance(v, list)} if isinstance(files, dict) else {},
        {str(p) for p in foreign} if isinstance(foreign, list) else set(),
        bool(data.get("open")),
    )


def _save(checkout: Path, files: Mapping[str, list[int]], foreign: set[str], open_: bool) -> None:
    data = {"files": dict(sorted(files.items())), "foreign": sorted(foreign), "open": open_}
    write_atomic(_record_path(checkout), json.dumps(data, separators=(",", ":")))


def _tracked(checkout: Path, environ: Mapping[str, str]) -> set[str] | None:
    """Every path git tracks in the checkout and its submodules (``ls-files --recurse-submodules``)."""
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_")}
    env.update({"LC_ALL": "C", "GIT_NO_REPLACE_OBJECTS": "1"})
    out = proc.probe(["git", "-C", str(checkout), "ls-files", "-z", "--recurse-submodules"], env=env, timeout=600.0)
    return None if out is None else {p for p in out.split("\0") if p}


def untracked(checkout: Path, environ: Mapping[str, str]) -> dict[str, list[int]]:
    """Every untracked file and link of ``checkout`` (relative path -> file identity), at any depth,
    ignored ones included; ``.git`` files and directories are left out."""
    tracked = _tracked(checkout, environ)
    if tracked is None:
        raise StepFailed(
            f"{checkout}: `git ls-files` failed while listing what the build wrote",
            f"check the checkout with `git -C {checkout} status`; remove it to start fresh",
        )
    found: dict[str, list[int]] = {}
    top = os.fspath(checkout)
    for dirpath, dirnames, filenames in os.walk(top):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]  # never followed
        dirnames[:] = [d for d in dirnames if d != ".git" and d not in links]
        rel_dir = os.path.relpath(dirpath, top)
        for name in [*filenames, *links]:
            if name == ".git":
                continue
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel in tracked:
                continue
            try:
                found[rel] = identity(os.lstat(os.path.join(dirpath, name)))
            except OSError:
                continue
    return found


def before_writing(checkout: Path, environ: Mapping[str, str]) -> None:
    """Before a step that writes the checkout: what changed since the last one is foreign."""
    if not (checkout / ".git").is_dir():
        return
    files, foreign, _open = _load(checkout)
    now = untracked(checkout, environ)
    foreign |= {path for path, ident in now.items() if files.get(path) != ident}
    _save(checkout, files, foreign, True)


def after_writing(checkout: Path, environ: Mapping[str, str]) -> None:
    """After a step that writes the checkout (also when it failed): what is there now is the build's."""
    if not (checkout / ".git").is_dir():
        return
    _files, foreign, _open = _load(checkout)
    _save(checkout, untracked(checkout, environ), foreign, False)


def foreign_files(checkout: Path, environ: Mapping[str, str]) -> list[str]:
    """Untracked paths the build did not put there as they are: recorded as foreign, or unlike
    (or missing from) what the last writing step left."""
    files, foreign, _open = _load(checkout)
    now = untracked(checkout, environ)
    return sorted(foreign | {path for path, ident in now.items() if files.get(path) != ident})
