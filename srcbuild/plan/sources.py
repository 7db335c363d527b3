"""The sources and patches steps, planned without touching the network.

The commands come from ``srcbuild.sources`` (mirror rules as ``url.<base>.insteadOf``, the shared
git object cache, parallel recursive submodule sync, ``git apply --check`` before applying).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from srcbuild.command import Command
from srcbuild.plan.model import Action, Step
from srcbuild.recipe import SourcePin


def sources_steps(
    pin: SourcePin,
    checkout: Path,
    git_cache: Path,
    mirror_args: tuple[str, ...],
    environ: Mapping[str, str],
    jobs: int,
) -> tuple[Step, ...]:
    commands = _sync_commands(pin, checkout, git_cache, mirror_args, environ, jobs)
    what = f"{pin.repo} at {pin.tag}" + (f" (commit {pin.commit[:12]})" if pin.commit else "")
    fetch = Step(
        id="sources",
        title=f"Sources: {what}",
        why="clone through the shared object cache, check out the tag and sync every submodule before setup.py "
        "runs, so setup.py never fetches anything itself",
        commands=commands,
        skip_if="sources-complete",
    )
    check = Step(
        id="sources-check",
        title="Check the checkout",
        why="the tag must resolve to the pinned commit and every submodule must be checked out",
        action=Action(
            "verify-sources",
            "compare the checked-out commit with the recipe's pin; check every submodule is present",
            args=(("checkout", str(checkout)), ("commit", pin.commit or ""), ("tag", pin.tag)),
        ),
    )
    return fetch, check


def _sync_commands(
    pin: SourcePin,
    checkout: Path,
    git_cache: Path,
    mirror_args: tuple[str, ...],
    environ: Mapping[str, str],
    jobs: int,
) -> tuple[Command, ...]:
    from srcbuild.sources.mirrors import parse_mirror_args
    from srcbuild.sources.sync import SourceSync

    mirrors = parse_mirror_args(list(mirror_args), dict(environ))
    return tuple(SourceSync(pin, checkout, git_cache, mirrors, jobs).commands())


def patches_step(checkout: Path, patch_files: tuple[Path, ...], labels: tuple[str, ...]) -> Step | None:
    if not patch_files:
        return None
    from srcbuild.sources.patches import PatchSet

    patches = PatchSet(checkout, patch_files, labels)
    return Step(
        id="patches",
        title=f"Patches: {', '.join(labels)}",
        why="the recipe's [build] patches, checked with git apply --check first and applied once",
        commands=(*patches.check_commands(), *patches.apply_commands()),
        skip_if="patches-applied",
    )
