"""A tag is a commit: a mirror that re-points a tag is refused, pinned or not.

The hostile mirror is a copy of the world's top repository whose tag was force-moved to another
commit, reached through a mirror rule more specific than the world's (git's longest prefix wins).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from srcbuild.errors import SourceMismatch
from srcbuild.sources import checkout as on_disk
from srcbuild.sources import tagpins
from srcbuild.sources.mirrors import parse_mirror_args
from tests.integration.sources import through_executor
from tests.integration.sources.test_sources_sync import sync_for
from tests.worlds.gitworld import World

pytestmark = pytest.mark.integration


def moved_copy(world: World, where: Path, tag: str, to: str) -> Path:
    """A bare copy of the world's torch repository with ``tag`` force-moved to commit ``to``."""
    copy = where / "pytorch.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(world.repos["pytorch/pytorch"]), str(copy)], check=True)
    subprocess.run(["git", "-C", str(copy), "tag", "-f", tag, to], check=True, capture_output=True)
    return copy


def test_a_moved_tag_is_refused_against_the_first_commit_seen(small_world: World, work: Path) -> None:
    first = sync_for(small_world, work / "a", "v1.1.0")
    good = small_world.tags["v1.1.0"]
    assert through_executor.sync(first, work / "a" / "build") == good
    # the first commit seen is recorded in the git cache entry and in the work dir
    assert json.loads(tagpins.cache_record(first).read_text()) == {"v1.1.0": good}
    assert json.loads(tagpins.work_record(first).read_text()) == {
        "https://github.com/pytorch/pytorch": {"v1.1.0": good}
    }

    other = small_world.tags["v1.0.0"]
    hostile = moved_copy(small_world, work, "v1.1.0", other)
    rules = parse_mirror_args([small_world.mirror_rule, f"https://github.com/pytorch/pytorch=file://{hostile}"], {})
    # the same git cache, another checkout (a second recipe, or the first one synced again)
    second = sync_for(small_world, work / "a", "v1.1.0", rules)
    second = type(second)(**{**second.__dict__, "checkout": work / "a" / "src" / "other"})
    with pytest.raises(SourceMismatch) as err:
        through_executor.sync(second, work / "a" / "build2")
    assert err.value.exit_code == 7
    assert err.value.message == (
        f"torch.tag: tag v1.1.0 of https://github.com/pytorch/pytorch resolves to {other} "
        f"(fetched from file://{hostile}), but it named {good} when first seen here "
        f"({tagpins.cache_record(first)}); nothing was built from it"
    )
    assert "--accept-moved-tag" in (err.value.hint or "")
    # the record still says the first commit: a rerun is refused the same way
    with pytest.raises(SourceMismatch):
        on_disk.verify_commit(second, os.environ)
    # losing the cache's record keeps the work dir's
    tagpins.cache_record(first).unlink()
    with pytest.raises(SourceMismatch, match=str(tagpins.work_record(first))):
        on_disk.verify_commit(second, os.environ)
    # the user accepts the move: recorded, no longer refused
    accepted = type(second)(**{**second.__dict__, "accept_moved": True})
    assert on_disk.verify_commit(accepted, os.environ) == other
    assert tagpins.first_seen(second) == (other, tagpins.cache_record(first))
    assert on_disk.verify_commit(second, os.environ) == other


def test_a_moved_tag_is_refused_against_the_recipes_commit(small_world: World, work: Path) -> None:
    good = small_world.tags["v1.1.0"]
    other = small_world.tags["v1.0.0"]
    hostile = moved_copy(small_world, work, "v1.1.0", other)
    rules = parse_mirror_args([small_world.mirror_rule, f"https://github.com/pytorch/pytorch=file://{hostile}"], {})
    sync = sync_for(small_world, work, "v1.1.0", rules, commit=good)
    with pytest.raises(SourceMismatch) as err:
        through_executor.sync(sync, work / "build")
    assert err.value.message.startswith(
        f"torch.commit: tag v1.1.0 of https://github.com/pytorch/pytorch resolves to {other}"
    )
    assert f"(fetched from file://{hostile}), but the recipe pins {good}" in err.value.message
    # --accept-moved-tag does not override a commit the recipe pins
    accepted = type(sync)(**{**sync.__dict__, "accept_moved": True})
    with pytest.raises(SourceMismatch):
        on_disk.verify_commit(accepted, os.environ)
