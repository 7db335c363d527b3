"""The sources and patches steps, planned from the resolved pin, mirror rules and patch hashes.

The commands come from ``srcbuild.sources`` (mirror rules as ``url.<base>.insteadOf``, the shared
git object cache, parallel recursive submodule sync, ``git apply --check`` before applying).
"""

from __future__ import annotations

from pathlib import Path

from srcbuild.plan.actions import ApplyPatches, PatchesApplied, SourcesComplete, SyncSources, VerifySources
from srcbuild.plan.model import Step
from srcbuild.resolve.model import ResolvedPatch
from srcbuild.sources.patches import PatchSet
from srcbuild.sources.sync import SourceSync


def sources_steps(sync: SourceSync) -> tuple[Step, ...]:
    """The sources step (every command of a sync from scratch) and the check after it."""
    pin = sync.pin
    commands = tuple(sync.commands())
    what = f"{pin.repo} at {pin.tag}" + (f" (commit {pin.commit[:12]})" if pin.commit else "")
    fetch = Step(
        id="sources",
        title=f"Sources: {what}",
        why="clone through the shared object cache, check out the tag and sync every submodule before setup.py "
        "runs, so setup.py never fetches anything itself",
        commands=commands,
        action=SyncSources(sync),
        skip_if=SourcesComplete(sync),
    )
    check = Step(
        id="sources-check",
        title="Check the checkout",
        why="the tag must resolve to the pinned commit and every submodule must be checked out",
        action=VerifySources(sync),
    )
    return fetch, check


def patch_set(checkout: Path, patches: tuple[ResolvedPatch, ...]) -> PatchSet:
    return PatchSet(checkout, [p.path for p in patches], [p.name for p in patches], [p.sha256 for p in patches])


def patches_step(checkout: Path, patches: tuple[ResolvedPatch, ...]) -> Step | None:
    if not patches:
        return None
    patch = patch_set(checkout, patches)
    return Step(
        id="patches",
        title=f"Patches: {', '.join(p.name for p in patches)}",
        why="the recipe's [build] patches, checked with git apply --check first and applied once",
        commands=(*patch.check_commands(), *patch.apply_commands()),
        action=ApplyPatches(patch),
        skip_if=PatchesApplied(patch),
        writes_checkout=True,  # a file a patch adds is the recipe's, not a local modification
    )
