"""Questions asked of a checkout on disk while a build runs: how much of a sync is done, which
commit the tag resolves to, which submodules are checked out, which patches are applied.

The plan holds ``SourceSync`` and ``PatchSet`` as data (their commands, what ``srcbuild plan``
shows); the executor's handlers ask these functions, which run git through ``srcbuild.proc``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from filelock import FileLock

import srcbuild.sources.tagpins as tagpins
from srcbuild import proc
from srcbuild.errors import SourceMismatch, StepFailed
from srcbuild.sources.patches import PatchSet, patch_sha256
from srcbuild.sources.sync import GIT_ENV, SourceSync

_STATUS_LINE = re.compile(r"^([ +\-U])([0-9a-f]{40}) (.+?)(?: \(.*\))?$")


def done_count(sync: SourceSync, environ: Mapping[str, str]) -> int:
    """How many of ``commands()``, from the first, a resumed sync can skip: all of them when the
    checkout is complete, all but the submodule commands when it is at the tag, else none.

    Reads the checkout (not pure); ``srcbuild plan`` shows ``commands()``.
    """
    total = len(sync.commands())
    head, tag = _head_and_tag(sync, environ)
    if head is None or head != tag:
        return 0
    if _complete_rows(sync, environ) is not None:
        return total
    return total - len(sync.submodule_commands())


def _probe(sync: SourceSync, environ: Mapping[str, str], *args: str) -> str | None:
    return proc.probe(["git", "-C", str(sync.checkout), *args], env=GIT_ENV.apply(environ))


def _head(sync: SourceSync, environ: Mapping[str, str]) -> str | None:
    if not (sync.checkout / ".git").exists():
        return None
    out = _probe(sync, environ, "rev-parse", "--verify", "--quiet", "HEAD")
    return out.strip() if out else None


def _head_and_tag(sync: SourceSync, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The checkout's HEAD and the commit of its tag, in one git call ((None, None) without a checkout)."""
    if not (sync.checkout / ".git").exists():
        return None, None
    out = _probe(sync, environ, "rev-parse", "HEAD", f"refs/tags/{sync.pin.tag}^{{commit}}")
    lines = out.split() if out else []
    if len(lines) == 2 and all(re.fullmatch(r"[0-9a-f]{40,64}", x) for x in lines):
        return lines[0], lines[1]
    return _head(sync, environ), _tag_commit(sync, sync.checkout, environ)  # one of them is missing: ask separately


def _tag_commit(sync: SourceSync, repo: Path, environ: Mapping[str, str]) -> str | None:
    out = proc.probe(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"refs/tags/{sync.pin.tag}^{{commit}}"],
        env=GIT_ENV.apply(environ),
    )
    return out.strip() if out else None


def verify_commit(sync: SourceSync, environ: Mapping[str, str]) -> str:
    """The commit the tag resolves to. ``SourceMismatch`` (exit 7) when the recipe pins another
    commit, or, where it pins none, when the tag named another commit when first seen here
    (``tagpins``); the first commit seen is recorded. ``sync.accept_moved`` records the new commit
    instead of refusing it (``--accept-moved-tag``)."""
    repo = sync.checkout if (sync.checkout / ".git").exists() else sync.cache
    commit = _tag_commit(sync, repo, environ)
    if commit is None:
        raise StepFailed(
            f"{sync.label}.tag: tag {sync.pin.tag} is not in {repo}",
            "run the sync first; if it ran, the repository has no such tag (check the tag name)",
        )
    fetched = sync.mirrors.rewrite(sync.pin.repo)
    via = f"fetched from {fetched}" if fetched != sync.pin.repo else "fetched from upstream, no mirror"
    pinned = (sync.pin.commit or "").lower()
    if pinned and commit != pinned:
        raise SourceMismatch(
            f"{sync.label}.commit: tag {sync.pin.tag} of {sync.pin.repo} resolves to {commit} ({via}), "
            f"but the recipe pins {pinned}; nothing was built from it",
            f'if upstream moved the tag on purpose, set {sync.label}.commit = "{commit}" in the recipe; '
            f"otherwise the repository or mirror serves a different history: fetch from another (--mirror)",
            {"tag": sync.pin.tag, "commit": commit, "pinned": pinned, "mirror": fetched},
        )
    if pinned:
        return commit
    seen = tagpins.first_seen(sync)
    if seen is not None and seen[0] != commit and not sync.accept_moved:
        raise SourceMismatch(
            f"{sync.label}.tag: tag {sync.pin.tag} of {sync.pin.repo} resolves to {commit} ({via}), "
            f"but it named {seen[0]} when first seen here ({seen[1]}); nothing was built from it",
            f"the tag was moved, by upstream or by the mirror: fetch from a source you trust; if the move "
            f'is expected, pin it with {sync.label}.commit = "{commit}" in the recipe or rerun with '
            "--accept-moved-tag",
            {"tag": sync.pin.tag, "commit": commit, "first_seen": seen[0], "mirror": fetched},
        )
    if seen is None or seen[0] != commit:
        tagpins.remember(sync, commit)
    return commit


def _status(
    sync: SourceSync, environ: Mapping[str, str], head_known: bool = False
) -> list[tuple[str, str, str]] | None:
    """(flag, commit, path) for every submodule at every depth, or None when git cannot tell."""
    if not head_known and _head(sync, environ) is None:
        return None
    rows = _gitlink_status(sync.checkout, environ)
    if rows is not None:
        return rows
    out = _probe(sync, environ, "submodule", "status", "--recursive")
    if out is None:
        return None
    rows = []
    for line in out.splitlines():
        match = _STATUS_LINE.match(line)
        if match:
            rows.append((match.group(1), match.group(2), match.group(3)))
    return rows


def submodule_commits(sync: SourceSync, environ: Mapping[str, str]) -> dict[str, str]:
    """Path (relative to the checkout) -> checked-out commit, at every depth, for the cache key."""
    rows = _status(sync, environ)
    if rows is None:
        raise StepFailed(
            f"{sync.label}: no checkout at {sync.checkout}", "run the sources step (srcbuild torch --resume)"
        )
    return {path: commit for _, commit, path in rows}


def is_complete(sync: SourceSync, environ: Mapping[str, str]) -> bool:
    """The checkout is at the tag and every submodule at every depth is checked out as recorded.

    ``git submodule status`` compares HEADs only; a submodule whose clone was killed before its
    checkout can have the right HEAD and no files. Its git dir then has no index yet, which is
    what the second test looks for (git dirs seeded from the cache for submodules this tag no
    longer has are not looked at).
    """
    return complete_commits(sync, environ) is not None


def complete_commits(sync: SourceSync, environ: Mapping[str, str]) -> dict[str, str] | None:
    """``submodule_commits()`` when ``is_complete()``, else None: both answers from one
    ``git submodule status`` (what a build asks after the sources step)."""
    head, tag = _head_and_tag(sync, environ)
    if head is None or head != tag:
        return None
    rows = _complete_rows(sync, environ)
    return None if rows is None else {path: commit for _, commit, path in rows}


def _complete_rows(sync: SourceSync, environ: Mapping[str, str]) -> list[tuple[str, str, str]] | None:
    """The status rows when every submodule is at its recorded commit and checked out (HEAD known)."""
    rows = _status(sync, environ, head_known=True)
    if rows is None or any(flag != " " for flag, _, _ in rows):
        return None
    if not all(_checked_out(sync.checkout / path) for _, _, path in rows):
        return None
    return rows


def lock(sync: SourceSync) -> FileLock:
    """A lock on the cache entry, to hold while the commands run: two syncs of one repository
    (two tags, two recipes) take turns, and the second then finds a warm cache."""
    sync.git_cache.mkdir(parents=True, exist_ok=True)
    return FileLock(f"{sync.cache}.lock")


def _gitlink_status(repo: Path, environ: Mapping[str, str], prefix: str = "") -> list[tuple[str, str, str]] | None:
    """What ``git submodule status --recursive`` says, from one ``git ls-files --stage`` per
    repository that has submodules and the submodules' HEAD files: flag " " (HEAD at the commit
    the index records), "+" (another commit) or "-" (not initialised). None when a HEAD is not a
    plain commit (a branch checked out), so the caller asks git itself."""
    out = proc.probe(["git", "-C", str(repo), "ls-files", "--stage", "-z"], env=GIT_ENV.apply(environ))
    if out is None:
        return None
    rows: list[tuple[str, str, str]] = []
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) != 3 or fields[0] != "160000":
            continue
        commit, sub = fields[1], repo / path
        git_dir = _git_dir(sub)
        if git_dir is None:
            rows.append(("-", commit, prefix + path))
            continue
        try:
            head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            rows.append(("-", commit, prefix + path))
            continue
        if not re.fullmatch(r"[0-9a-f]{40,64}", head):
            return None
        rows.append((" " if head == commit else "+", head if head != commit else commit, prefix + path))
        nested = _gitlink_status(sub, environ, f"{prefix}{path}/") if (sub / ".gitmodules").is_file() else []
        if nested is None:
            return None
        rows.extend(nested)
    return rows


def _git_dir(worktree: Path) -> Path | None:
    """The git dir of a submodule work tree (its ``.git`` file or directory), or None."""
    gitfile = worktree / ".git"
    if gitfile.is_dir():
        return gitfile
    try:
        text = gitfile.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = Path(text[len("gitdir:") :].strip())
    return git_dir if git_dir.is_absolute() else worktree / git_dir


def _checked_out(worktree: Path) -> bool:
    """A submodule work tree whose git dir (named by its ``.git`` file) has an index: git checked it out."""
    gitfile = worktree / ".git"
    try:
        text = gitfile.read_text(encoding="utf-8").strip()
    except IsADirectoryError:
        return (gitfile / "index").is_file()
    except OSError:
        return False
    if not text.startswith("gitdir:"):
        return False
    git_dir = Path(text[len("gitdir:") :].strip())
    return ((worktree / git_dir) if not git_dir.is_absolute() else git_dir).joinpath("index").is_file()


def recorded_patches(patches: PatchSet, environ: Mapping[str, str]) -> dict[str, str]:
    """Label -> sha256 of the patches recorded as applied in the checkout."""
    if not patches.marker.is_file():
        return {}
    out = proc.probe(["git", "config", "--file", str(patches.marker), "--null", "--list"], env=dict(environ))
    recorded: dict[str, str] = {}
    for item in (out or "").split("\0"):
        key, _, value = item.partition("\n")
        match = re.fullmatch(r"patch\.(.+)\.sha256", key)
        if match:
            recorded[match.group(1)] = value
    return recorded


def pending_patches(patches: PatchSet, environ: Mapping[str, str]) -> PatchSet:
    """The patches not applied yet; raises StepFailed when the checkout holds other changes."""
    recorded = recorded_patches(patches, environ)
    wanted = dict(zip(patches.labels, patches.patch_files))
    stale = [label for label in recorded if label not in wanted]
    changed = [x for x, path in wanted.items() if x in recorded and recorded[x] != patch_sha256(path)]
    if stale or changed:
        reasons = [f"{x} (changed since)" for x in changed] + [f"{x} (no longer in the recipe)" for x in stale]
        what = ", ".join(reasons)
        raise StepFailed(
            f"patches: {patches.checkout} has patches applied that the recipe no longer asks for: {what}",
            f"remove {patches.checkout} so the sources step checks it out again",
        )
    keep = [(p, label) for label, p in wanted.items() if label not in recorded]
    return PatchSet(patches.checkout, [p for p, _ in keep], [label for _, label in keep])


def patches_applied(patches: PatchSet, environ: Mapping[str, str]) -> bool:
    """True when exactly these patches are recorded as applied, each with its current content (a
    recorded patch the recipe no longer lists is not: ``pending_patches`` refuses that checkout)."""
    recorded = recorded_patches(patches, environ)
    return recorded == {label: patch_sha256(path) for path, label in zip(patches.patch_files, patches.labels)}
