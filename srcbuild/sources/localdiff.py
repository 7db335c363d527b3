"""Local modifications of a checkout: what differs from its tag plus the recipe's patches.

A build compiles what is in the checkout, which may hold hand edits (a build resumed after fixing a
file). ``local_changes`` compares the working tree with the state the recipe asks for and returns
the files that differ and one sha256 over the differences, so a cache entry can say it was built
from modified sources (``Manifest.modified``) and never pass for the clean tag.

"Modified" means the bytes differ, whatever git's index says. The expected state of the checkout
is the tree of the tag's commit with the recipe's patches applied in order, read into a private
index (``read-tree`` then ``git apply --cached``; the real index and the working tree are not
touched). That index has no assume-unchanged or skip-worktree bit and no stat cache, so
``update-index --refresh`` hashes every tracked file and ``git diff`` of the index against the
working tree lists each file whose content differs. Untracked files count unless the tree's own
``.gitignore`` files cover them (``.git/info/exclude`` and ``core.excludesFile`` are local and do
not hide a file the build could glob). HEAD must be the tag's commit: a local commit is a
modification (listed as ``HEAD (at X, not Y)``) even when its files are undone. Each submodule,
at every depth, is compared the same way with the commit its parent's pinned tree records.
Every git call runs with ``GIT_NO_REPLACE_OBJECTS=1``: a ``git replace`` of the tag's commit
cannot make another tree look pinned. Paths are relative to the checkout; a submodule's files
carry its path.

The hash is the sha256 of, per repository in sorted path order: its path, a NUL, its HEAD, a NUL,
its binary diff, a NUL, then each untracked file's path and content sha256. It is empty when
nothing differs.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srcbuild import proc
from srcbuild.errors import StepFailed

GIT_TIMEOUT = 600.0  # a torch checkout has tens of thousands of files to hash in a fresh index


@dataclass(frozen=True)
class LocalChanges:
    """The files of a checkout that differ from its tag plus patches, and one hash over the differences."""

    files: tuple[str, ...] = ()
    diff_sha256: str = ""

    @property
    def modified(self) -> bool:
        return bool(self.files)

    def to_json(self) -> dict[str, Any]:
        return {"diff_sha256": self.diff_sha256, "files": list(self.files)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> LocalChanges:
        if not data:
            return cls()
        files = data.get("files") or []
        if not isinstance(files, list):
            raise ValueError("modified.files is not a list")
        return cls(files=tuple(str(f) for f in files), diff_sha256=str(data.get("diff_sha256") or ""))

    def summary(self, limit: int = 3) -> str:
        """``csrc/a.c, csrc/b.c and 2 more`` (for one-line messages)."""
        shown = ", ".join(self.files[:limit])
        more = len(self.files) - limit
        return f"{shown} and {more} more" if more > 0 else shown


def _git(repo: Path, args: Sequence[str], env: Mapping[str, str], what: str) -> str:
    out = proc.probe(["git", "-C", str(repo), *args], env=env, timeout=GIT_TIMEOUT)
    if out is None:
        raise StepFailed(
            f"{repo}: `git {' '.join(args[:3])}` failed while looking for local modifications ({what})",
            f"check the checkout with `git -C {repo} status`",
        )
    return out


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


def _commit(repo: Path, ref: str, env: Mapping[str, str]) -> str | None:
    out = proc.probe(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], env=env)
    value = out.strip() if out else ""
    return value if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", value) else None


def _gitlink(repo: Path, commit: str, path: str, env: Mapping[str, str]) -> str | None:
    """The commit ``commit``'s tree records for the submodule at ``path`` (None when it records none)."""
    out = _git(repo, ["ls-tree", "-z", commit, "--", path], env, f"the commit recorded for {path}")
    fields = out.split("\0", 1)[0].split(None, 3)
    return fields[2] if len(fields) == 4 and fields[1] == "commit" else None


def _repo_changes(
    repo: Path, rel: str, expected: str, patch_files: Sequence[Path], env: Mapping[str, str]
) -> tuple[list[str], bytes]:
    """(changed files relative to the top checkout, hash material) of one repository against the
    tree of commit ``expected`` plus ``patch_files``, compared by content."""
    prefix = f"{rel}/" if rel else ""
    head = _commit(repo, "HEAD", env)
    moved = [] if head == expected else [f"{prefix}HEAD (at {(head or 'no commit')[:12]}, not {expected[:12]})"]
    with tempfile.TemporaryDirectory(prefix="srcbuild-diff-") as work:
        base = ["-c", "core.quotePath=false"]
        diff_args = ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
        genv = {**env, "GIT_INDEX_FILE": os.path.join(work, "index")}
        # a private index of the expected tree: no assume-unchanged or skip-worktree bit, no stat
        # cache anyone else wrote, so every tracked file is compared by content
        _git(repo, ["read-tree", expected], genv, "reading the pinned tree")
        for patch in patch_files:
            _git(repo, ["apply", "--cached", "--whitespace=nowarn", str(patch)], genv, f"patch {patch.name}")
        proc.probe(["git", "-C", str(repo), "update-index", "-q", "--refresh"], env=genv, timeout=GIT_TIMEOUT)
        names = _lines(_git(repo, [*base, "diff", "--name-only", *diff_args], genv, "listing changed files"))
        diff = _git(repo, [*base, "diff", "--binary", *diff_args], genv, "diffing") if names else ""
        # only the tree's own .gitignore files hide an untracked file (.git/info/exclude and
        # core.excludesFile are local, so a file they hide still reaches the build)
        others = ["ls-files", "--others", "--exclude-per-directory=.gitignore"]
        untracked = _lines(_git(repo, [*base, *others], genv, "untracked"))
    material = bytearray(f"{rel}\0{head}\0{diff}\0".encode())
    for name in sorted(untracked):
        path = repo / name
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"
        material += f"{name}\0{digest}\n".encode()
    return moved + [prefix + n for n in names] + [prefix + n for n in untracked], bytes(material)


def git_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of every git call here: none of the caller's GIT_* variables, replace
    objects off (a ``git replace`` must not stand in for the pinned commit), C locale."""
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_")}
    env.update({"LC_ALL": "C", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_CONFIG_NOSYSTEM": "1"})
    return env


def local_changes(
    checkout: Path,
    patch_files: Sequence[Path],
    submodules: Sequence[str] = (),
    *,
    tag: str | None = None,
    environ: Mapping[str, str],
) -> LocalChanges:
    """What differs in ``checkout`` (and each of its ``submodules``, paths relative to it) from
    the commit of ``tag`` (HEAD when None) plus ``patch_files`` applied in order, each submodule
    from the commit its parent's pinned tree records (see the module docstring)."""
    env = git_env(environ)
    expected = _commit(checkout, f"refs/tags/{tag}" if tag else "HEAD", env)
    if expected is None:
        raise StepFailed(
            f"{checkout}: {'tag ' + tag if tag else 'HEAD'} is not a commit there; cannot compare the checkout",
            "sync the sources again (remove the checkout to start fresh)",
        )
    files, digest = _repo_changes(checkout, "", expected, patch_files, env)
    hasher = hashlib.sha256(digest)
    pinned: dict[str, tuple[Path, str]] = {"": (checkout, expected)}
    for rel in sorted(submodules):  # parents sort before their nested submodules
        parent = max((p for p in pinned if not p or rel.startswith(p + "/")), key=len)
        parent_repo, parent_commit = pinned[parent]
        recorded = _gitlink(parent_repo, parent_commit, rel[len(parent) + 1 :] if parent else rel, env)
        if recorded is None:
            files.append(f"{rel} (not a submodule of the pinned tree)")
            hasher.update(f"{rel}\0extra\0".encode())
            continue
        pinned[rel] = (checkout / rel, recorded)
        sub_files, sub_digest = _repo_changes(checkout / rel, rel, recorded, (), env)
        files += sub_files
        hasher.update(sub_digest)
    if not files:
        return LocalChanges()
    return LocalChanges(files=tuple(sorted(set(files))), diff_sha256=hasher.hexdigest())
