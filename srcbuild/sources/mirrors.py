"""Mirror rules: where git fetches a repository from instead of the URL a recipe or ``.gitmodules`` names.

A rule maps a URL prefix to a replacement, exactly like git's ``url.<base>.insteadOf <prefix>``
(https://git-scm.com/docs/git-config, ``url.<base>.insteadOf``): any URL that starts with the prefix
is rewritten and the longest matching prefix wins. srcbuild never edits a git config file; it passes
the rules to every git process as ``-c`` arguments, which git also hands down to the processes that
clone submodules, so one rule set covers the top repository and every submodule at every depth.

Where rules come from (``parse_mirror_args``), later items overriding earlier ones for the same prefix:

* ``PREFIX=REPLACEMENT``: one prefix rule. A prefix on ``https://HOST/`` also covers the same
  repositories spelt ``git@HOST:``, ``ssh://git@HOST/`` and ``git://HOST/`` (PyTorch's flatbuffers
  submodule uses ``git@github.com:``, torch-build.md §4a/§4b).
* ``gitee``: the built-in map ``gitee.toml`` (one rule per repository and spelling, because gitee's
  ``gitee.com/mirrors/<name>`` namespace is flat, torch-build.md §4c).
* a path to a ``.toml`` file in the same format as ``gitee.toml``: a user-edited map.
* ``none``: drop everything before it (to override ``SRCBUILD_MIRROR``).

Without command-line items, ``SRCBUILD_MIRROR`` (comma or space separated) is the default.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from srcbuild.errors import UsageError
from srcbuild.patterns import LazyPattern
from srcbuild.precedence import env_value
from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

GITEE_MAP = Path(__file__).resolve().parent / "gitee.toml"
MIRROR_NAMES: Mapping[str, Path] = {"gitee": GITEE_MAP}
ENV_VAR = "SRCBUILD_MIRROR"


@record
class MirrorRule:
    """Rewrite URLs starting with ``prefix`` to start with ``base`` instead."""

    prefix: str
    base: str
    origin: str = ""  # "--mirror gitee", "SRCBUILD_MIRROR", ...

    @property
    def is_local(self) -> bool:
        """True when the replacement is a local path or a file:// URL (git's "file" protocol)."""
        return self.base.startswith("file://") or self.base.startswith("/")

    def to_json(self) -> dict[str, str]:
        return {"prefix": self.prefix, "base": self.base, "origin": self.origin}


@record
class MirrorRules:
    """An ordered set of rules with unique prefixes; empty means "fetch from the named URLs"."""

    rules: tuple[MirrorRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rewrite(self, url: str) -> str:
        """The URL git will fetch: the longest matching prefix replaced by its base, as git does."""
        best: MirrorRule | None = None
        for rule in self.rules:
            if url.startswith(rule.prefix) and (best is None or len(rule.prefix) > len(best.prefix)):
                best = rule
        return url if best is None else best.base + url[len(best.prefix) :]

    def git_config_args(self, own_urls: Sequence[str] = ()) -> list[str]:
        """``-c`` arguments for every git process: one ``insteadOf`` per rule, then the transports.

        Only https, http, ssh and git are allowed everywhere (``protocol.allow=never`` refuses the
        rest, such as ``ext::`` and ``fd::``, in a ``.gitmodules`` file too). The file protocol is
        allowed as git allows it by default (``user``: a repository named on the command line, never
        a submodule), except when a rule points at a local mirror: since git 2.38.1 a submodule then
        needs ``protocol.file.allow=always`` (git-config ``protocol.allow``), and so that this opens
        the local disk to the user's rules alone, every other local URL (``/...``, ``file://...``)
        is rewritten to a transport git refuses. ``own_urls`` (the recipe's repository) are
        exempt: the recipe names them itself.
        """
        args: list[str] = []
        for rule in self.rules:
            args += ["-c", f"url.{rule.base}.insteadOf={rule.prefix}"]
        args += ["-c", "protocol.allow=never"]
        for name in REMOTE_TRANSPORTS:
            args += ["-c", f"protocol.{name}.allow=always"]
        if not any(rule.is_local for rule in self.rules):
            return [*args, "-c", "protocol.file.allow=user"]
        args += ["-c", "protocol.file.allow=always"]
        for url in own_urls:
            if url_transport(url) == "file":
                args += ["-c", f"url.{url}.insteadOf={url}"]
        for prefix in ("/", "file://"):
            args += ["-c", f"url.{REFUSED_LOCAL}.insteadOf={prefix}"]
        return args

    def describe(self) -> list[str]:
        """One line per rule, for ``srcbuild plan``."""
        return [f"{r.prefix} -> {r.base}  ({r.origin})" for r in self.rules]

    def to_json(self) -> list[dict[str, str]]:
        return [r.to_json() for r in self.rules]

    def merged(self, more: Iterable[MirrorRule]) -> MirrorRules:
        """These rules plus ``more``; a later rule replaces an earlier one with the same prefix."""
        by_prefix: dict[str, MirrorRule] = {r.prefix: r for r in self.rules}
        for rule in more:
            by_prefix.pop(rule.prefix, None)
            by_prefix[rule.prefix] = rule
        return MirrorRules(tuple(by_prefix.values()))


# The transports a mirror rule may use: git's own "known-safe" list (git-config protocol.allow) and
# the file protocol for a mirror on the local disk. Remote helpers (ext::, fd::, ...) are refused:
# ext:: runs a command and fd:: waits forever on a file descriptor nobody writes.
REMOTE_TRANSPORTS = ("https", "http", "ssh", "git")
TRANSPORTS = (*REMOTE_TRANSPORTS, "file")
# What a local URL no rule covers becomes when local mirrors are in use: a remote helper name git
# refuses ("fatal: transport 'srcbuild-refused-local-url' not allowed").
REFUSED_LOCAL = "srcbuild-refused-local-url::"
_HELPER = LazyPattern(r"([A-Za-z][A-Za-z0-9+.-]*)::")
_SCHEME = LazyPattern(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCP = LazyPattern(r"[^/:]+:")


def url_transport(url: str) -> str:
    """The transport git uses for ``url``, as git's transport.c decides it: a remote helper name
    (``ext`` for ``ext::cmd``), the scheme of ``scheme://``, ``ssh`` for ``[user@]host:path``, else
    ``file`` (a path)."""
    helper = _HELPER.match(url)
    if helper:
        return helper.group(1).lower()
    scheme = _SCHEME.match(url)
    if scheme:
        name = scheme.group(1).lower()
        return "ssh" if name in ("git+ssh", "ssh+git") else name
    if _SCP.match(url):
        return "ssh"
    return "file"


def check_transport(url: str, where: str) -> None:
    """Raise UsageError for a mirror URL whose transport srcbuild does not fetch over."""
    transport = url_transport(url)
    if transport not in TRANSPORTS:
        raise UsageError(
            f"{where}: mirror {url!r} uses the {transport!r} transport; srcbuild fetches only over "
            f"{', '.join(TRANSPORTS)}",
            "point the rule at an https://, ssh://, git:// or file:// URL or a local path",
        )


_HTTPS_HOST = LazyPattern(r"^https://([^/@:]+)/(.*)\Z")


def url_spellings(url: str) -> list[str]:
    """The ways ``.gitmodules`` files spell the repository behind an ``https://HOST/...`` URL.

    ``https://github.com/google/`` -> itself, ``git@github.com:google/``,
    ``ssh://git@github.com/google/`` and ``git://github.com/google/``. Other URLs are returned as is.
    """
    match = _HTTPS_HOST.match(url)
    if not match:
        return [url]
    host, rest = match.groups()
    return [url, f"git@{host}:{rest}", f"ssh://git@{host}/{rest}", f"git://{host}/{rest}"]


def prefix_rules(prefix: str, base: str, origin: str) -> list[MirrorRule]:
    """One user rule, expanded to the SSH and git:// spellings of an https prefix."""
    return [MirrorRule(p, base, origin) for p in url_spellings(prefix)]


def map_rules(data: Mapping[str, Any], origin: str, source: str) -> list[MirrorRule]:
    """Rules from a mirror map (``gitee.toml`` format).

    Each repository gets four rules: ``https://github.com/<owner>/<name>`` and
    ``git@github.com:<owner>/<name>``, each with and without ``.git``. The spelling with ``.git`` is
    longer, so it wins for URLs that have it, and the replacement never ends up as ``name.git.git``.
    """
    base = data.get("base")
    repos = data.get("repo")
    if not isinstance(base, str) or not isinstance(repos, list):
        raise UsageError(
            f'{source}: a mirror map needs `base = "..."` and [[repo]] tables',
            "copy the built-in gitee.toml shipped with srcbuild and edit it",
        )
    check_transport(base, source)
    rules: list[MirrorRule] = []
    for i, row in enumerate(repos):
        github = row.get("github") if isinstance(row, dict) else None
        name = row.get("gitee", row.get("mirror")) if isinstance(row, dict) else None
        if not isinstance(github, str) or not isinstance(name, str) or github.count("/") != 1:
            raise UsageError(
                f'{source}: repo[{i}] needs github = "owner/name" and gitee = "name"',
                "see the built-in gitee.toml for the format",
            )
        target = f"{base}{name}.git"
        for stem in (f"https://github.com/{github}", f"git@github.com:{github}"):
            rules.append(MirrorRule(f"{stem}.git", target, origin))
            rules.append(MirrorRule(stem, target, origin))
    return rules


def load_map(path: Path, origin: str) -> list[MirrorRule]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read mirror map {path}: {exc}", "pass a readable TOML file") from None
    return map_rules(data, origin, str(path))


def _split(values: Iterable[str]) -> list[str]:
    return [item for value in values for item in re.split(r"[,\s]+", value) if item]


def _absolute_base(base: str) -> str:
    """Make a relative local path absolute (git runs in several directories)."""
    if "://" in base or base.startswith("/") or ":" in base:
        return base
    absolute = os.path.abspath(base)
    return absolute + "/" if base.endswith("/") else absolute


def parse_mirror_args(args: Sequence[str], environ: Mapping[str, str]) -> MirrorRules:
    """Rules from ``--mirror`` values, or from ``SRCBUILD_MIRROR`` when none were given."""
    raw, where = (list(args), "--mirror") if args else ([env_value(environ, ENV_VAR) or ""], ENV_VAR)
    for value in raw:
        if any(not c.isprintable() for c in value.replace(" ", "")):  # newline, NUL, ... (not spaces)
            raise UsageError(
                f"{where}: {value!r} holds a control character; a mirror is a URL, a name or a file",
                "write each mirror on one line, e.g. --mirror https://github.com/=https://mirror.example/github/",
            )
    items = _split(raw)
    rules = MirrorRules()
    for item in items:
        origin = f"{where} {item}" if len(item) < 40 else where
        if item == "none":
            rules = MirrorRules()
        elif item in MIRROR_NAMES:
            rules = rules.merged(load_map(MIRROR_NAMES[item], f"{where} {item}"))
        elif "=" in item:
            prefix, _, base = item.partition("=")
            if not prefix or not base:
                raise UsageError(
                    f"{where}: mirror rule {item!r} needs a prefix and a replacement",
                    "write PREFIX=REPLACEMENT, e.g. https://github.com/=https://mirror.example/github/",
                )
            check_transport(base, where)
            if prefix.endswith("/") and not base.endswith(("/", ":")):
                raise UsageError(
                    f"{where}: mirror rule {item!r} maps a prefix ending in '/' to one that does not",
                    f"add the slash: {prefix}={base}/",
                )
            rules = rules.merged(prefix_rules(prefix, _absolute_base(base), origin))
        elif item.endswith(".toml") and Path(item).is_file():
            rules = rules.merged(load_map(Path(item), f"{where} {item}"))
        else:
            names = ", ".join(sorted(MIRROR_NAMES))
            raise UsageError(
                f"{where}: unknown mirror {item!r}",
                f"valid names: {names}, none; or a rule PREFIX=REPLACEMENT "
                "(e.g. https://github.com/=https://mirror.example/github/) or a mirror map file.toml",
            )
    return rules
