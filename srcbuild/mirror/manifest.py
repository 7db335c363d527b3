"""A mirror directory's ``manifest.json``: every file with its sha256, size and origin, and what
the mirror was made for.

::

    {"format": 1,
     "made_for": {"kepler-cu92": ["torch", "torchvision"]},   # recipe name -> packages
     "git_hosts": ["github.com"],                               # for the git@HOST: mirror rules
     "providers": ["redist", "pypi"],                           # the toolchain providers it holds files of
     "files": {"nvidia/compute/...run": {"sha256": .., "size": .., "origin": "https://..."}, ...}}

``verify`` reads every file the manifest lists and reports each one that is missing, whose size
or sha256 differ or that a symbolic link takes out of the mirror, and every file of a git
repository the manifest does not list. ``--mirror-dir`` runs it before a command takes anything
from a mirror directory. The manifest is written to a temporary name and renamed into place.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srcbuild.errors import NotFoundError, UsageError
from srcbuild.files import VerifiedFiles, sha256_file
from srcbuild.mirror.layout import GIT, MANIFEST, file_url, git_path
from srcbuild.records import record

FORMAT = 1


@record
class Entry:
    sha256: str
    size: int
    origin: str

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size": self.size, "origin": self.origin}


@dataclass
class Manifest:
    made_for: dict[str, list[str]] = field(default_factory=dict)
    git_hosts: list[str] = field(default_factory=list)
    files: dict[str, Entry] = field(default_factory=dict)
    providers: list[str] = field(default_factory=list)  # the toolchain providers whose files it holds

    @property
    def size(self) -> int:
        return sum(e.size for e in self.files.values())

    def serves(self, recipe: str, package: str) -> bool:
        return package in self.made_for.get(recipe, [])

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "made_for": {name: sorted(set(pkgs)) for name, pkgs in sorted(self.made_for.items())},
            "git_hosts": sorted(set(self.git_hosts)),
            "providers": list(dict.fromkeys(self.providers)),
            "files": {path: self.files[path].to_json() for path in sorted(self.files)},
        }

    def write(self, root: Path) -> None:
        tmp = root / f".{MANIFEST}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        tmp.replace(root / MANIFEST)


def parse_manifest(text: str, where: str) -> Manifest:
    def bad(why: str) -> UsageError:
        return UsageError(
            f"{where}: not a srcbuild mirror manifest ({why})",
            "point --mirror-dir at a directory made by srcbuild mirror create",
        )

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise bad(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad(f"format is not {FORMAT}")
    files: dict[str, Entry] = {}
    raw_files = data.get("files")
    made_for = data.get("made_for")
    hosts = data.get("git_hosts")
    if not isinstance(raw_files, dict) or not isinstance(made_for, dict) or not isinstance(hosts, list):
        raise bad("files, made_for or git_hosts missing")
    for path, row in raw_files.items():
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("sha256"), str)
            or not isinstance(row.get("size"), int)
            or ".." in Path(path).parts
            or path.startswith("/")
        ):
            raise bad(f"bad entry {path!r}")
        files[path] = Entry(row["sha256"], row["size"], str(row.get("origin", "")))
    providers = data.get("providers", [])  # absent in mirrors made before it was recorded
    return Manifest(
        made_for={str(k): [str(p) for p in v] for k, v in made_for.items() if isinstance(v, list)},
        git_hosts=[str(h) for h in hosts],
        files=files,
        providers=[str(p) for p in providers] if isinstance(providers, list) else [],
    )


def read_manifest(base: str) -> Manifest | None:
    """The manifest of the mirror at ``base`` (a directory or an http(s) URL with a trailing
    slash), or None when there is none yet; ``NotFoundError`` when an HTTP mirror cannot be read."""
    url = file_url(base) + MANIFEST
    if not base.startswith(("http://", "https://")):
        path = Path(base) / MANIFEST
        if not path.is_file():
            return None
        return parse_manifest(path.read_text(encoding="utf-8"), str(path))
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            text = response.read().decode("utf-8")
    except (urllib.error.URLError, OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NotFoundError(
            f"--mirror-dir: cannot read {url}: {reason}",
            "check the URL (it names the directory that holds manifest.json) and that the server is up",
        ) from None
    return parse_manifest(text, url)


def read_git_refs(base: str, url: str) -> dict[str, str] | None:
    """The refs (name -> commit) the mirror at ``base`` holds for the git repository ``url``, from
    the ``info/refs`` file ``mirror create`` writes for git's "dumb" HTTP protocol; None when the
    mirror has no repository for it."""
    rel = git_path(url)
    if rel is None:
        return None
    text = None
    if base.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(f"{base}{rel}/info/refs", timeout=30) as response:
                text = response.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError):
            return None
    else:
        try:
            text = (Path(base) / rel / "info" / "refs").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    refs = {}
    for line in text.splitlines():
        sha, _, name = line.partition("\t")
        if name:
            refs[name.removesuffix("^{}")] = sha.strip()
    return refs


@record
class Problem:
    path: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "why": self.why}


def verify(root: Path, manifest: Manifest, checked: VerifiedFiles | None = None) -> list[Problem]:
    """Every file of the manifest that is missing, whose size or sha256 differ, or that a symbolic
    link takes out of the mirror (never followed there); and every file under ``git/`` the
    manifest does not list (a ref added to a repository moves a tag as surely as a changed one).
    With ``checked``, a file whose identity has not changed since it last matched is not hashed
    again (``srcbuild.files.VerifiedFiles``)."""
    problems = []
    top = root.resolve()
    for rel, entry in sorted(manifest.files.items()):
        path = root / rel
        real = path.resolve()
        if real != top and top not in real.parents:
            problems.append(Problem(rel, f"a symbolic link out of the mirror (to {real}); not followed"))
            continue
        if not path.is_file():
            problems.append(Problem(rel, "missing"))
            continue
        size = path.stat().st_size
        if size != entry.size:
            problems.append(Problem(rel, f"size {size}, manifest {entry.size}"))
            continue
        if checked is not None and checked.matches(path, entry.sha256):
            continue
        digest = sha256_file(path)
        if digest != entry.sha256:
            problems.append(Problem(rel, f"sha256 {digest[:12]}..., manifest {entry.sha256[:12]}..."))
    for dirpath, dirnames, filenames in os.walk(root / GIT):
        for name in sorted(filenames):
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if rel not in manifest.files:
                problems.append(Problem(rel, "not in the manifest"))
        dirnames.sort()
    return problems
