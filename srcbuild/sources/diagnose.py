"""Explaining a failed git command of a sync: which URL could not be fetched and what to do about it.

Git's own lines are matched (``fatal: clone of '<url>' into submodule path '<path>' failed``,
``fatal: unable to access '<url>': ...``, ``fatal: couldn't find remote ref ...``, a submodule commit
a mirror does not have) and turned into one ``StepFailed`` naming the URL, the mirror it was
rewritten to, and the fix: usually a ``--mirror`` rule (torch-build.md §4b/§4c).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from srcbuild.command import Command
from srcbuild.errors import StepFailed
from srcbuild.sources.mirrors import REMOTE_TRANSPORTS, TRANSPORTS, MirrorRules, url_transport

_SUBMODULE_CLONE = re.compile(r"clone of '([^']+)' into submodule path '([^']+)' failed")
_URL_IN_QUOTES = re.compile(r"'((?:https?|ssh|git|file)://[^']+|[\w.-]+@[\w.-]+:[^']+|/[^']+)'")
_MISSING_REF = re.compile(r"couldn't find remote ref (\S+)")
_NOT_ALLOWED = re.compile(r"transport '([^']+)' not allowed")
_MISSING_COMMIT = re.compile(r"Fetched in submodule path '([^']+)', but it did not contain ([0-9a-f]{40})")

MIRROR_HINT = "pass --mirror gitee or --mirror https://github.com/=<your mirror>/ (SRCBUILD_MIRROR sets a default)"


def _last_fatal(tail: Sequence[str]) -> str:
    for line in reversed(tail):
        stripped = line.strip()
        if stripped.startswith(("fatal:", "error:")) and "clone of '" not in stripped:
            return stripped
    for line in reversed(tail):
        if line.strip():
            return line.strip()
    return "no output"


def _where(url: str, mirrors: MirrorRules) -> tuple[str, str]:
    """(" (rewritten to X)" or "", the hint for this URL)."""
    target = mirrors.rewrite(url)
    if target == url:
        return "", f"no mirror rule covers {url}: {MIRROR_HINT}"
    return (
        f" (mirror {target})",
        f"the mirror does not serve it: check {target}, or add a rule for this repository "
        f"(--mirror {url}=<url that has it>)",
    )


def explain_git_failure(
    command: Command,
    tail: Sequence[str],
    mirrors: MirrorRules,
    label: str = "torch",
    log_path: Path | None = None,
) -> StepFailed:
    """A one-line message and a hint for a git command of a sync that exited non-zero."""
    said = _last_fatal(tail)
    log = f"; full output in {log_path}" if log_path else ""
    text = "\n".join(tail)

    missing = _MISSING_COMMIT.search(text)
    if missing:
        path, commit = missing.groups()
        return StepFailed(
            f"{label} sources: submodule {path} has no commit {commit} at its remote",
            f"a mirror may lag behind upstream: retry later or map that repository to another mirror{log}",
        )
    clone = _SUBMODULE_CLONE.search(text)
    refused = _NOT_ALLOWED.search(text)
    if refused and refused.group(1) not in REMOTE_TRANSPORTS:  # https refused: the environment forbids it
        url = clone.group(1) if clone else next((a for a in command.argv if "://" in a or "::" in a), "")
        where = f"submodule {clone.group(2)} names {url}" if clone else f"{url} is"
        transport = url_transport(url)
        why = "a local repository no --mirror rule maps to" if transport == "file" else f"a {transport!r} URL"
        return StepFailed(
            f"{label} sources: {where}, {why}: refused (srcbuild fetches over {', '.join(TRANSPORTS)}, "
            "and from the local disk only through the --mirror rules given)",
            f"if you trust that URL, map it with --mirror {url}=<https:// or local mirror of it>{log}",
        )
    if clone:
        url, path = clone.groups()
        via, hint = _where(url, mirrors)
        return StepFailed(
            f"{label} sources: could not fetch submodule {path} from {url}{via}",
            f"{hint}; git said: {said}{log}",
        )
    ref = _MISSING_REF.search(text)
    if ref:
        url = next((a for a in command.argv if "://" in a or "@" in a), "")
        via, _ = _where(url, mirrors) if url else ("", "")
        return StepFailed(
            f"{label} sources: {url}{via} has no {ref.group(1)}",
            f"check the tag in the recipe's [{label}] table, or whether the mirror has synced it{log}",
        )
    quoted = _URL_IN_QUOTES.search(said)
    if quoted and any(w in said for w in ("unable to access", "not found", "not allowed", "Could not read")):
        url = quoted.group(1)
        original = next((a for a in command.argv if a == url or mirrors.rewrite(a) == url), url)
        via, hint = _where(original, mirrors)
        return StepFailed(f"{label} sources: could not fetch {original}{via}", f"{hint}; git said: {said}{log}")
    step = " ".join(a for a in command.argv if not a.startswith("url.") and a != "-c")[:120]
    return StepFailed(f"{label} sources: `{step}` failed: {said}", f"see the full output{log}")
