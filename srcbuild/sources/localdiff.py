"""Local modifications of a checkout: what differs from its tag plus the recipe's patches.

A build compiles what is in the checkout, which may hold hand edits (a build resumed after fixing a
file). ``local_changes`` compares the working tree with the state the recipe asks for and returns
the files that differ and one sha256 over the differences, so a cache entry can say it was built
from modified sources (``Manifest.modified``) and never pass for the clean tag.

The expected state of the checkout is HEAD's tree with the recipe's patches applied in order
(``git apply --cached`` into a private index: the real index and the working tree are not
touched). ``git diff`` of that index against the working tree gives the changed files; untracked
files that ``.gitignore`` does not cover (a new source file a build could glob) count too. Each
submodule, at every depth, is compared with its own HEAD the same way (patches do not reach into
submodules; ``SourceSync`` already checks that each one is at its recorded commit), with the
repository's own index, whose stat cache spares hashing files that did not change. Paths are
relative to the checkout; a submodule's files carry its path.

The hash is the sha256 of, per repository in sorted path order: its path, a NUL, its binary diff,
a NUL, then each untracked file's path and content sha256. It is empty when nothing differs.
"""

from __future__ import annotations

import hashlib
import os
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


def _repo_changes(
    repo: Path, rel: str, patch_files: Sequence[Path], env: Mapping[str, str]
) -> tuple[list[str], bytes]:
    """(changed files relative to the top checkout, hash material) of one repository."""
    prefix = f"{rel}/" if rel else ""
    with tempfile.TemporaryDirectory(prefix="srcbuild-diff-") as work:
        base = ["-c", "core.quotePath=false"]
        diff_args = ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
        genv = dict(env)
        if patch_files:  # the expected state is HEAD plus the patches: a private index holds it
            genv["GIT_INDEX_FILE"] = os.path.join(work, "index")
            _git(repo, ["read-tree", "HEAD"], genv, "reading HEAD")
            for patch in patch_files:
                _git(repo, ["apply", "--cached", "--whitespace=nowarn", str(patch)], genv, f"patch {patch.name}")
            proc.probe(["git", "-C", str(repo), "update-index", "-q", "--refresh"], env=genv, timeout=GIT_TIMEOUT)
        else:  # HEAD itself: the repository's own index (its stat cache spares re-hashing every file)
            diff_args.append("HEAD")
        names = _lines(_git(repo, [*base, "diff", "--name-only", *diff_args], genv, "listing changed files"))
        diff = _git(repo, [*base, "diff", "--binary", *diff_args], genv, "diffing") if names else ""
        untracked = _lines(_git(repo, [*base, "ls-files", "--others", "--exclude-standard"], genv, "untracked"))
    # a submodule's directory is untracked in a private index only if it is not a gitlink: never here
    material = bytearray(f"{rel}\0{diff}\0".encode())
    for name in sorted(untracked):
        path = repo / name
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"
        material += f"{name}\0{digest}\n".encode()
    return [prefix + n for n in names] + [prefix + n for n in untracked], bytes(material)


def local_changes(
    checkout: Path,
    patch_files: Sequence[Path],
    submodules: Sequence[str] = (),
    *,
    environ: Mapping[str, str],
) -> LocalChanges:
    """What differs in ``checkout`` (and each of its ``submodules``, paths relative to it) from
    HEAD plus ``patch_files`` applied in order (see the module docstring)."""
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_")}
    env["LC_ALL"] = "C"
    files, digest = _repo_changes(checkout, "", patch_files, env)
    hasher = hashlib.sha256(digest)
    for rel in sorted(submodules):
        sub_files, sub_digest = _repo_changes(checkout / rel, rel, (), env)
        files += sub_files
        hasher.update(sub_digest)
    if not files:
        return LocalChanges()
    return LocalChanges(files=tuple(sorted(set(files))), diff_sha256=hasher.hexdigest())
