"""The commit a tag named when it was first seen here: the pin of a tag no recipe pins.

A tag is a name a repository (or any mirror of it) can move. A recipe may pin the commit
(``[torch] commit = "..."``; every catalog recipe does); where it does not, the first commit
the tag is seen to name is recorded twice, so that losing one copy keeps the other:

    <git cache entry>/srcbuild-tag-commits.json     {"v1.7.1": "57bffc3a...", ...}
    <checkout's parent>/.tag-commits.json           {"https://github.com/pytorch/pytorch": {"v1.7.1": ...}}

An extension's git source (``git+URL@TAG``) is checked the same way after its checkout, against
``<work dir>/ext-tag-commits.json`` (the same form as the work dir's record).

The git cache entry is the one of the URL the recipe names (``sync.cache_repo``), whichever
mirror the tag was fetched through, so a mirror that serves another commit for the same tag is
caught however the sources are reached (a mirror rule, ``gitee``, ``--mirror-dir``). A later
checkout whose tag names another commit is refused (``checkout.verify_commit``, exit 7) until
the user pins the commit in the recipe or accepts the move (``--accept-moved-tag``, which records
the new commit). Reading a damaged record counts as no record: the next check writes it again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from srcbuild.files import write_atomic
from srcbuild.recipe.model import SourcePin
from srcbuild.sources.sync import SourceSync

CACHE_RECORD = "srcbuild-tag-commits.json"
WORK_RECORD = ".tag-commits.json"
EXT_TAG_RECORD = "ext-tag-commits.json"  # <work dir>/: an extension's git tags, {url: {tag: commit}}
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cache_record(sync: SourceSync) -> Path:
    return sync.cache / CACHE_RECORD


def work_record(sync: SourceSync) -> Path:
    return sync.checkout.parent / WORK_RECORD


def seen_in(record: Path, url: str, tag: str) -> str | None:
    """The commit ``tag`` of ``url`` named when first seen, from a work-dir record, or None."""
    repo = _read(record).get(url)
    value = repo.get(tag) if isinstance(repo, dict) else None
    return value if isinstance(value, str) and _COMMIT.fullmatch(value) else None


def remember_in(record: Path, url: str, tag: str, commit: str) -> None:
    """Record ``commit`` as what ``tag`` of ``url`` names, in a work-dir record."""
    work = _read(record)
    repo = work.get(url)
    tags = dict(repo) if isinstance(repo, dict) else {}
    if tags.get(tag) == commit:
        return
    tags[tag] = commit
    work[url] = tags
    record.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(record, json.dumps(work, indent=1, sort_keys=True) + "\n")


def first_seen(sync: SourceSync) -> tuple[str, Path] | None:
    """(commit, the record it was read from) of ``sync``'s tag when first seen, or None."""
    value = _read(cache_record(sync)).get(sync.pin.tag)
    if isinstance(value, str) and _COMMIT.fullmatch(value):
        return value, cache_record(sync)
    found = seen_in(work_record(sync), sync.pin.repo, sync.pin.tag)
    return (found, work_record(sync)) if found is not None else None


def remember(sync: SourceSync, commit: str) -> None:
    """Record ``commit`` as what ``sync``'s tag names, in the git cache and the work dir."""
    cached = _read(cache_record(sync))
    if cached.get(sync.pin.tag) != commit:
        cached[sync.pin.tag] = commit
        write_atomic(cache_record(sync), json.dumps(cached, indent=1, sort_keys=True) + "\n")
    remember_in(work_record(sync), sync.pin.repo, sync.pin.tag, commit)


def known_commit(pin: SourcePin, checkout: Path, git_cache: Path) -> str | None:
    """The commit ``pin``'s tag names on this machine: the pinned one, else the one first seen
    (None when neither is known). Two small file reads: a cache lookup may ask it."""
    if pin.commit:
        return pin.commit.lower()
    seen = first_seen(SourceSync(pin, checkout, git_cache))
    return seen[0] if seen is not None else None

