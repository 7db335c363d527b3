"""Local modifications of a checkout: what differs from its tag plus the recipe's patches.

A build compiles what is in the checkout, which may hold hand edits (a build resumed after fixing a
file). ``local_changes`` compares the working tree with the state the recipe asks for and returns
the files that differ and one sha256 over the differences, so a cache entry can say it was built
from modified sources (``Manifest.modified``) and never pass for the clean tag.

"Modified" means the bytes differ, whatever git's index or attributes say. The expected state of
the checkout is the tree of the tag's commit with the recipe's patches applied in order, read into
a private index (``read-tree`` then ``git apply --cached``; the real index and the working tree are
not touched), so no assume-unchanged or skip-worktree bit counts. Each tracked file's raw bytes
(a link's target) are hashed as git hashes a blob and compared with the pinned blob, its type and
executable bit too: no clean or smudge filter, textconv, ident or eol rule runs, so none set in
``.git/info/attributes``, ``core.attributesFile`` or a gitattributes file in the working tree can
turn an edited file back into the pinned one. A file whose bytes differ only as the pinned tree's
own ``.gitattributes`` converts them on checkout (``*.bat text eol=crlf`` in torch) is not an
edit: such files are checked out again in a private repository that borrows the objects and has
no local attributes, no filters and no user configuration, and compared byte for byte. Untracked
files count unless the pinned tree's own ``.gitignore`` files cover them (``.git/info/exclude``,
``core.excludesFile`` and a ``.gitignore`` added to the working tree, which may ignore itself,
are local and do not hide a file the build could glob); and an untracked file the pinned tree
ignores (an output directory such as ``build/`` or ``torch/lib/``) counts unless the build itself
wrote it as it is now (``srcbuild.sources.written``: recorded around each step that writes the
checkout), so a file dropped there between a failed build and ``--resume`` is a modification. HEAD must be the
tag's commit: a local commit is a modification (listed as ``HEAD (at X, not Y)``) even when its
files are undone. Each submodule, at every depth, is compared the same way with the commit its
parent's pinned tree records. Every git call runs with ``GIT_NO_REPLACE_OBJECTS=1``: a ``git
replace`` of the tag's commit cannot make another tree look pinned. Paths are relative to the
checkout; a submodule's files carry its path.

The hash is the sha256 of, per repository in sorted path order: its path, a NUL, its HEAD, a
NUL, then for each changed tracked file its path, the pinned blob's id and the sha256 of its bytes
("-" when gone), then each untracked file's path and content sha256; then, after every
repository, each untracked file the build did not write (its path, ``not written by the build``
and its content sha256). It is empty when nothing differs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from srcbuild import proc
from srcbuild.errors import StepFailed
from srcbuild.files import sha256_file
from srcbuild.records import record
from srcbuild.sources import written

GIT_TIMEOUT = 600.0  # a torch checkout has tens of thousands of files to hash in a fresh index


@record
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


def _expected_entries(repo: Path, env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(mode, object id, path) of every entry of the private index ``env`` names."""
    out = _git(repo, ["ls-files", "-s", "-z"], env, "listing the pinned tree")
    entries = []
    for line in out.split("\0"):
        meta, tab, path = line.partition("\t")
        fields = meta.split()
        if tab and len(fields) == 3:
            entries.append((fields[0], fields[1], path))
    return entries


def _object_id(kind: str, data: bytes, oid_length: int) -> str:
    """The id git gives ``data`` as an object of ``kind`` with no filter applied (``hash-object --no-filters``)."""
    digest = hashlib.sha1 if oid_length == 40 else hashlib.sha256
    return digest(f"{kind} {len(data)}\0".encode() + data).hexdigest()


def _differs_raw(repo: Path, mode: str, oid: str, path: str) -> bool | None:
    """Whether the working-tree file differs from the pinned blob, read as raw bytes: no clean or
    smudge filter, no textconv, ident or eol conversion runs, whatever any attributes file says.
    True: it differs (missing, another type, another mode); False: same bytes; None: the bytes
    differ but a checkout may have converted them (a regular file), which ``_converted`` decides."""
    full = repo / path
    try:
        st = full.lstat()
    except OSError:
        return True  # deleted
    if mode == "120000":
        if not stat.S_ISLNK(st.st_mode):
            return True
        return _object_id("blob", os.fsencode(os.readlink(full)), len(oid)) != oid
    if not stat.S_ISREG(st.st_mode) or bool(st.st_mode & stat.S_IXUSR) != (mode == "100755"):
        return True
    digest = hashlib.sha1() if len(oid) == 40 else hashlib.sha256()
    digest.update(f"blob {st.st_size}\0".encode())
    try:
        with open(full, "rb") as handle:  # in blocks: a checkout may hold large files
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return True
    return None if digest.hexdigest() != oid else False


def _converted(repo: Path, paths: Sequence[str], index: str, env: Mapping[str, str]) -> set[str]:
    """Of ``paths`` (working-tree bytes unlike their blobs), those whose bytes are exactly what a
    clean checkout writes: the pinned tree's own ``.gitattributes`` may convert on checkout
    (``*.bat text eol=crlf`` in torch). The check-out is made in a private repository that borrows
    the objects: no local attributes file, no configured filter, no user configuration."""
    if not paths:
        return set()
    common = _git(repo, ["rev-parse", "--git-common-dir"], env, "the object store").strip()
    objects = (repo / common).resolve() / "objects"  # relative to the repository, or absolute
    with tempfile.TemporaryDirectory(prefix="srcbuild-pinned-") as work:
        tree = Path(work) / "tree"
        clean = {k: v for k, v in env.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
        clean.update({"HOME": work, "XDG_CONFIG_HOME": work, "GIT_CONFIG_GLOBAL": os.devnull})
        _git(Path(work), ["init", "-q", "--template=", str(tree)], clean, "a private repository")
        info = tree / ".git" / "objects" / "info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "alternates").write_text(f"{objects}\n")
        listed = Path(work) / "paths"
        listed.write_bytes(b"\0".join(os.fsencode(p) for p in paths) + b"\0")
        out = proc.probe(
            ["git", "-C", str(tree), "checkout-index", "-f", "-z", "--stdin"],
            env={**clean, "GIT_INDEX_FILE": index},
            timeout=GIT_TIMEOUT,
            stdin=listed,
        )
        if out is None:
            return set()
        same = set()
        for path in paths:
            with contextlib.suppress(OSError):
                if (tree / path).read_bytes() == (repo / path).read_bytes():
                    same.add(path)
        return same


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
        index = os.path.join(work, "index")
        genv = {**env, "GIT_INDEX_FILE": index}
        # a private index of the expected tree: no assume-unchanged or skip-worktree bit, no stat
        # cache anyone else wrote
        _git(repo, ["read-tree", expected], genv, "reading the pinned tree")
        for patch in patch_files:
            _git(repo, ["apply", "--cached", "--whitespace=nowarn", str(patch)], genv, f"patch {patch.name}")
        # every file compared by its raw bytes with the pinned blob: git's own comparison would run
        # the clean filters, textconv, ident and eol rules an attributes file names, which can
        # turn an edited file back into the pinned one
        entries = [e for e in _expected_entries(repo, genv) if e[0] != "160000"]  # submodules: below
        verdicts = {path: _differs_raw(repo, mode, oid, path) for mode, oid, path in entries}
        unsure = [path for path, differs in verdicts.items() if differs is None]
        converted = _converted(repo, unsure, index, env)
        names = sorted(p for p, differs in verdicts.items() if differs or (differs is None and p not in converted))
        # only the tree's own .gitignore files hide an untracked file (.git/info/exclude and
        # core.excludesFile are local, so a file they hide still reaches the build)
        others = ["ls-files", "--others", "--exclude-per-directory=.gitignore"]
        untracked = _lines(_git(repo, [*base, *others], genv, "untracked"))
        pinned_ignores = {path for _m, _o, path in entries if path.rsplit("/", 1)[-1] == ".gitignore"}
        untracked += _ignored_locally(repo, pinned_ignores - set(names), work, genv)
    oids = {path: oid for _mode, oid, path in entries}
    material = bytearray(f"{rel}\0{head}\0".encode())
    for name in names:
        material += f"{name}\0{oids[name]}\0{_content_digest(repo / name)}\n".encode()
    material += b"\0"
    for name in sorted(untracked):
        material += f"{name}\0{_content_digest(repo / name)}\n".encode()
    return moved + [prefix + n for n in names] + [prefix + n for n in untracked], bytes(material)


def _ignored_locally(repo: Path, pinned: set[str], work: str, env: Mapping[str, str]) -> list[str]:
    """Untracked files that only a ``.gitignore`` outside the pinned tree hides (one that ignores
    itself and the files next to it): each ignored path's deciding pattern must come from a
    ``.gitignore`` of the pinned tree (``pinned``, unmodified ones), else its files count."""
    listed = ["ls-files", "-z", "--others", "--ignored", "--directory", "--exclude-per-directory=.gitignore"]
    ignored = [p for p in _git(repo, listed, env, "ignored files").split("\0") if p]
    if not ignored:
        return []
    paths = Path(work) / "ignored"
    paths.write_bytes(b"".join(os.fsencode(p) + b"\0" for p in ignored))
    out = proc.probe(
        ["git", "-C", str(repo), "check-ignore", "--no-index", "-v", "-z", "--stdin"],
        env=env,
        timeout=GIT_TIMEOUT,
        ok_codes=(0, 1),
        stdin=paths,
    )
    fields = (out or "").split("\0")
    found: set[str] = set()
    for at in range(0, len(fields) - 3, 4):
        source, path = fields[at], fields[at + 3]
        if source in pinned:
            continue
        if path.endswith("/"):
            inside = _git(repo, ["ls-files", "-z", "--others", "--", path], env, f"files under {path}")
            found.update(p for p in inside.split("\0") if p)
        else:
            found.add(path)
    return sorted(found)


def _content_digest(path: Path) -> str:
    """The sha256 of a file's raw bytes (a link's target), or "-" when it is neither."""
    try:
        if path.is_symlink():
            return hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
        if path.is_file():
            return sha256_file(path)
    except OSError:
        pass
    return "-"


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
    # each repository's comparison is a few git processes: they all run at the same time, and their
    # answers are taken in this order (the digest is the same as one after the other)
    top = proc.Background(functools.partial(_repo_changes, checkout, "", expected, patch_files, env))
    pinned: dict[str, tuple[Path, str]] = {"": (checkout, expected)}
    asked: list[tuple[str, proc.Background[tuple[list[str], bytes]] | None]] = []
    for rel in sorted(submodules):  # parents sort before their nested submodules
        parent = max((p for p in pinned if not p or rel.startswith(p + "/")), key=len)
        parent_repo, parent_commit = pinned[parent]
        recorded = _gitlink(parent_repo, parent_commit, rel[len(parent) + 1 :] if parent else rel, env)
        if recorded is None:
            asked.append((rel, None))
            continue
        pinned[rel] = (checkout / rel, recorded)
        asked.append((rel, proc.Background(functools.partial(_repo_changes, checkout / rel, rel, recorded, (), env))))
    foreign = proc.Background(functools.partial(written.foreign_files, checkout, env))
    files, digest = top.result()
    hasher = hashlib.sha256(digest)
    for rel, job in asked:
        if job is None:
            files.append(f"{rel} (not a submodule of the pinned tree)")
            hasher.update(f"{rel}\0extra\0".encode())
            continue
        sub_files, sub_digest = job.result()
        files += sub_files
        hasher.update(sub_digest)
    # untracked files the build did not write as they are, ignored output directories included
    for rel in foreign.result():
        files.append(rel)
        hasher.update(f"{rel}\0not written by the build\0{_content_digest(checkout / rel)}\n".encode())
    if not files:
        return LocalChanges()
    return LocalChanges(files=tuple(sorted(set(files))), diff_sha256=hasher.hexdigest())
