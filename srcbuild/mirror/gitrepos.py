"""Bare git mirrors of a pinned tag and every submodule it needs, at every depth.

``GitMirror.add_tag(url, tag)`` makes ``DIR/git/<host>/<path>`` (``layout.git_path``) a bare
repository holding ``refs/tags/<tag>``, then reads the tag's ``.gitmodules`` and gitlinks and does
the same for each submodule's URL with the one commit the tag pins (``refs/heads/srcbuild/<sha>``,
a branch so that a plain ``git clone`` of the mirror brings it), recursively. Nothing else is
fetched: not the other branches and tags (a server that refuses to send a commit by its id gets
its branches and tags fetched once, then only the needed ref is kept and the rest pruned).

What is already there is not fetched again: a tag or commit the repository holds is skipped, so
a second run adds only what is missing. Each fetch stays one pack (``fetch.unpackLimit=1``), and
every repository gets the files git's "dumb" HTTP protocol reads (``git update-server-info``), so
any static web server can serve the mirror directory. Git runs with the user's mirror rules
(``MirrorRules.git_config_args``), so ``--mirror gitee`` or a rule to a local world fetches from
there while the mirror is laid out by the URLs the recipe and ``.gitmodules`` name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from srcbuild import proc
from srcbuild.errors import StepFailed, UsageError
from srcbuild.mirror.layout import git_host, git_path
from srcbuild.sources.mirrors import MirrorRules

PIN_PREFIX = "refs/heads/srcbuild/"
_SCP = re.compile(r"^((?:[^@/:]+@)?[^/:]+:)(.*)$")


def resolve_relative(parent: str, url: str) -> str:
    """A ``.gitmodules`` URL made absolute against the superproject's URL, as git does for
    ``./x`` and ``../x`` (each ``..`` drops one path component of the parent)."""
    if not url.startswith(("./", "../")):
        return url
    head, rest = "", parent.rstrip("/")
    scp = _SCP.match(rest) if "://" not in rest else None
    if "://" in rest:
        scheme, _, after = rest.partition("://")
        host, _, rest = after.partition("/")
        head = f"{scheme}://{host}/"
    elif scp:
        head, rest = scp.group(1), scp.group(2)
    parts = [p for p in rest.split("/") if p]
    for piece in url.split("/"):
        if piece == "..":
            if parts:
                parts.pop()
        elif piece not in (".", ""):
            parts.append(piece)
    return head + "/".join(parts)


@dataclass
class GitMirror:
    """Fills ``root/git/`` (see the module docstring)."""

    root: Path
    rules: MirrorRules
    environ: Mapping[str, str]
    log_path: Path | None = None
    echo: IO[str] | None = None
    hosts: set[str] = field(default_factory=set)
    touched: set[Path] = field(default_factory=set)  # every repository a recipe needs
    changed: set[Path] = field(default_factory=set)  # those that got new objects or refs this run
    _seen: set[tuple[str, str]] = field(default_factory=set)

    def _git(self, repo: Path | None, *args: str, what: str, fetch_url: str | None = None) -> proc.RunResult:
        argv = ["git"]
        if fetch_url is not None:
            argv += self.rules.git_config_args([fetch_url])
        if repo is not None:
            argv += ["-C", str(repo)]
        env = {**self.environ, "GIT_TERMINAL_PROMPT": "0"}
        try:
            return proc.run([*argv, *args], env=env, log_path=self.log_path)
        except FileNotFoundError:
            raise StepFailed(f"{what}: git is not installed", "install git and run the same command again") from None

    def _check(self, result: proc.RunResult, what: str) -> None:
        if not result.ok:
            last = next((line for line in reversed(result.tail) if line.strip()), "")
            where = f"see {self.log_path}" if self.log_path else "rerun with --debug"
            raise StepFailed(f"{what} failed (exit {result.returncode}): {last}".rstrip(": "), where)

    def _repo(self, url: str) -> tuple[Path, bool]:
        """The bare repository of ``url`` and whether this call created it (then it is empty)."""
        rel = git_path(url)
        if rel is None:
            raise UsageError(
                f"{url}: srcbuild mirrors only remote git URLs (https://, ssh://, git://, user@host:path)",
                "name the repository by its remote URL in the recipe, and map it with --mirror",
            )
        repo = self.root / rel
        created = not (repo / "HEAD").is_file()
        if created:
            repo.mkdir(parents=True, exist_ok=True)
            self._check(self._git(None, "init", "--quiet", "--bare", "--template=", str(repo), what="git init"), url)
        self.hosts.add(git_host(url) or "")
        self.touched.add(repo)
        return repo, created

    def _has(self, repo: Path, ref: str) -> str | None:
        found = self._git(repo, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", what="git rev-parse")
        return found.tail[-1].strip() if found.ok and found.tail else None

    def _fetch(self, repo: Path, url: str, *refspecs: str) -> proc.RunResult:
        # fetch.unpackLimit=1: what arrives stays one pack (a mirror of few files), never loose objects
        args = ("-c", "fetch.unpackLimit=1", "fetch", "--quiet", "--no-tags", url, *refspecs)
        return self._git(repo, *args, what="git fetch", fetch_url=url)

    def _set_head(self, repo: Path, ref: str) -> None:
        (repo / "HEAD").write_text(f"ref: {ref}\n", encoding="utf-8")  # what git symbolic-ref writes

    def _drop_refs(self, repo: Path, prefix: str) -> None:
        listed = self._git(repo, "for-each-ref", "--format=%(refname)", prefix, what="git for-each-ref")
        for name in (line.strip() for line in listed.tail if line.strip()):
            self._git(repo, "update-ref", "-d", name, what="git update-ref")

    def add_tag(self, url: str, tag: str, commit: str | None = None) -> str:
        """Mirror ``tag`` of ``url`` and its submodules; return the commit the tag points to."""
        repo, created = self._repo(url)
        ref = f"refs/tags/{tag}"
        sha = None if created else self._has(repo, ref)
        if sha is None:
            if self.echo is not None:
                print(f"  git {url} {tag}", file=self.echo, flush=True)
            self._check(self._fetch(repo, url, f"+{ref}:{ref}"), f"fetching {tag} of {url}")
            self.changed.add(repo)
            sha = self._has(repo, ref)
            if sha is None:
                raise StepFailed(f"{url}: {tag} is not a commit", "check the recipe's tag")
            self._set_head(repo, ref)
        if commit and sha != commit:
            raise StepFailed(
                f"{url}: {tag} is {sha}, not the commit {commit} the recipe pins", "check the recipe's pin"
            )
        self._submodules(repo, url, sha)
        return sha

    def add_commit(self, url: str, sha: str) -> None:
        """Mirror one commit of ``url`` (a submodule's pin) and its own submodules."""
        if (url, sha) in self._seen:
            return
        self._seen.add((url, sha))
        repo, created = self._repo(url)
        ref = PIN_PREFIX + sha
        if created or self._has(repo, ref) != sha:
            if self.echo is not None:
                print(f"  git {url} {sha[:12]}", file=self.echo, flush=True)
            if not self._fetch(repo, url, f"+{sha}:{ref}").ok:
                # a server that refuses to send a commit by its id: its branches and tags, once
                spec = ("+refs/heads/*:refs/srcbuild-all/heads/*", "+refs/tags/*:refs/srcbuild-all/tags/*")
                self._check(self._fetch(repo, url, *spec), f"fetching {url}")
                if self._has(repo, sha) is None:
                    raise StepFailed(f"{url}: commit {sha} is not there", "check the superproject's submodule pin")
                self._check(self._git(repo, "update-ref", ref, sha, what="git update-ref"), f"pinning {sha}")
                self._drop_refs(repo, "refs/srcbuild-all/")
            self.changed.add(repo)
            self._set_head(repo, ref)
        self._submodules(repo, url, sha)

    def _submodules(self, repo: Path, url: str, sha: str) -> None:
        links = self._gitlinks(repo, sha)
        if not links:
            return
        urls = self._module_urls(repo, sha)
        for path, sub_sha in links:
            sub_url = urls.get(path)
            if sub_url is None:
                continue  # a gitlink .gitmodules does not name: git skips it too
            self.add_commit(resolve_relative(url, sub_url), sub_sha)

    def _gitlinks(self, repo: Path, sha: str) -> Sequence[tuple[str, str]]:
        text = proc.probe(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--full-tree", sha], timeout=300)
        if text is None:
            raise StepFailed(f"listing {sha} in {repo} failed", f"run: git -C {repo} ls-tree -r {sha}")
        out = []
        for item in text.split("\0"):
            meta, _, path = item.partition("\t")
            fields = meta.split()
            if len(fields) == 3 and fields[0] == "160000":
                out.append((path, fields[2]))
        return out

    def _module_urls(self, repo: Path, sha: str) -> dict[str, str]:
        """path -> URL of every submodule the commit's ``.gitmodules`` names (one git process)."""
        argv = ["git", "-C", str(repo), "config", "--blob", f"{sha}:.gitmodules", "-z", "--get-regexp", r"^submodule\."]
        listed = proc.probe(argv, timeout=60) or ""
        paths: dict[str, str] = {}
        urls: dict[str, str] = {}
        for item in listed.split("\0"):
            key, _, value = item.partition("\n")
            name, _, field_name = key[len("submodule.") :].rpartition(".")
            if field_name == "path":
                paths[name] = value
            elif field_name == "url":
                urls[name] = value
        return {path: urls[name] for name, path in paths.items() if name in urls}

    def finish(self) -> None:
        """Write the files git's dumb HTTP protocol reads into every repository this run changed."""
        for repo in sorted(self.changed):
            self._check(self._git(repo, "update-server-info", what="git update-server-info"), f"{repo}")
            (repo / "FETCH_HEAD").unlink(missing_ok=True)
