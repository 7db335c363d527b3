"""The wheel a build left in its dist directory."""

from __future__ import annotations

from pathlib import Path

from srcbuild.errors import StepFailed


def find_wheel(dist: Path, pattern: str) -> Path:
    """The newest file in ``dist`` matching ``pattern``; StepFailed when the build made none."""
    found = sorted(dist.glob(pattern), key=lambda p: p.stat().st_mtime)
    if not found:
        raise StepFailed(f"the build made no wheel matching {dist / pattern}", "read the build step's log")
    return found[-1]
