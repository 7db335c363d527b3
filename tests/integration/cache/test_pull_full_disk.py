"""A full local disk during ``cache pull`` is exit 4 naming the filesystem, also when the disk
fills only as the last buffered bytes are flushed (a wheel larger than the free space but smaller
than one write buffer never fails at a write), and the pull leaves no partial file behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from tests.integration.cache.test_serve_and_full_disk import _in_full_tmpfs
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("filled", [0, 1040000])
def test_pull_into_a_full_cache_is_exit_4_naming_the_filesystem(tmp_path: Path, filled: int) -> None:
    share = tmp_path / "share"
    wheel = make_wheel(tmp_path / "dist", payload=os.urandom(3 << 20))  # does not fit in 1 MiB
    WheelCache(share).store(wheel, make_manifest(wheel))
    script = (
        (f'head -c {filled} /dev/zero > "$FULL/filler" 2>/dev/null; ' if filled else "")
        + f'"$PYTHON" -m srcbuild cache pull --trust-unsigned --remote {share} --cache-dir "$FULL/cache"; '
        'echo "pull=$?"; ls -A "$FULL/cache/tmp" "$FULL/cache/entries" 2>/dev/null | grep -v ":$" | grep . ; true'
    )
    ran = _in_full_tmpfs(tmp_path, script)
    words = " ".join(ran.stdout.split() + ran.stderr.split())
    assert "pull=4" in ran.stdout, words
    assert f"error: the filesystem at {tmp_path / 'full'} is full (No space left on device)" in words
    assert "internal error" not in words and "a filesystem is full" not in words
    assert ran.stdout.strip().endswith("pull=4"), ran.stdout  # nothing left in tmp/ or entries/
