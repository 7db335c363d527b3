"""torchvision's torch-wheel step hashes the cached torch wheel while copying it: a byte changed
with the file's size and mtime kept (disk bit rot, which the lookup's quick check trusts) stops the
build with exit 7 naming the entry, moves the entry aside, and leaves no wheel to build on."""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from srcbuild.cache.store import WheelCache
from srcbuild.envmods import EnvChanges
from srcbuild.errors import CacheIntegrityError
from srcbuild.execute.context import BuildContext
from srcbuild.execute.executor import Executor
from srcbuild.execute.records import TorchBuilt
from srcbuild.paths import Paths
from srcbuild.plan.actions import TorchWheel
from srcbuild.plan.model import Plan, Step
from srcbuild.resolve.resolver import resolve_unprobed
from tests.unit.cache.synthetic import catalog_recipe, make_manifest, make_wheel


def _run_torch_wheel_step(
    tmp_path: Path, cache: WheelCache, dest: Path, after_lookup: Callable[[], None] | None = None
) -> str:
    """The torch-wheel step of a torchvision plan, run by the executor with the real handler; the
    torch wheel is what torch's pipeline hands back on a cache hit (its lookup checked it quickly)."""
    paths = Paths.resolve(work_dir=tmp_path / "work", cache_dir=cache.root, environ={})
    resolved = dataclasses.replace(resolve_unprobed(catalog_recipe(), "torchvision"), paths=paths)

    (entry,) = cache.entries()
    entry.check_fast()  # what the lookup checks: the file identity against the stamp, else a re-hash
    if after_lookup is not None:
        after_lookup()
    torch = TorchBuilt(entry.wheel_path, entry.manifest.sha256, entry.key)  # what srcbuild.pipeline records

    plan = Plan(
        package="torchvision",
        recipe="r",
        version="0.8.2",
        settings=(),
        steps=(Step("torch-wheel", "torch wheel", "why", action=TorchWheel("r", dest)),),
        env=EnvChanges(),
        checkout=tmp_path / "src",
        build_root=tmp_path / "builds" / "r-torchvision",
        dist_dir=tmp_path / "src" / "dist",
    )
    out = io.StringIO()
    executor = Executor(plan, console=Console(file=out, width=200), environ={}, context=BuildContext(resolved=resolved))
    executor.records.add(torch)
    executor.run()
    return out.getvalue()


@pytest.fixture
def cached_torch(tmp_path: Path) -> tuple[WheelCache, Path]:
    wheel = make_wheel(tmp_path / "dist", payload=os.urandom(8192))
    cache = WheelCache(tmp_path / "cache")
    entry = cache.store(wheel, make_manifest(wheel))
    entry.check_fast()  # hashed once: the stamp now vouches for this size and mtime
    return cache, wheel


def test_an_intact_torch_wheel_is_copied(tmp_path: Path, cached_torch: tuple[WheelCache, Path]) -> None:
    cache, wheel = cached_torch
    dest = tmp_path / "torch-wheel"
    out = _run_torch_wheel_step(tmp_path, cache, dest)
    assert (dest / wheel.name).read_bytes() == wheel.read_bytes()
    assert "(sha256 checked)" in out


def test_bit_rot_that_keeps_size_and_mtime_stops_the_build(
    tmp_path: Path, cached_torch: tuple[WheelCache, Path]
) -> None:
    # the lookup's check catches it (the write moved the ctime); a change after the lookup, before
    # the copy, is caught by the copy's own hash: that is what this test drives
    cache, wheel = cached_torch
    (entry,) = cache.entries()

    def rot() -> None:
        stat = entry.wheel_path.stat()
        data = bytearray(entry.wheel_path.read_bytes())
        data[len(data) // 2] ^= 0x01
        entry.wheel_path.write_bytes(bytes(data))
        os.utime(entry.wheel_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert entry.wheel_path.stat().st_size == stat.st_size

    dest = tmp_path / "torch-wheel"
    with pytest.raises(CacheIntegrityError) as raised:
        _run_torch_wheel_step(tmp_path, cache, dest, after_lookup=rot)
    exc = raised.value
    assert exc.exit_code == 7
    assert exc.message.startswith(f"torch wheel {wheel.name} of cache entry {entry.key[:12]} has sha256 ")
    assert f"its manifest says {entry.manifest.sha256}; the entry is damaged (moved aside to " in exc.message
    assert exc.hint == "run the same command again: torch is then pulled or rebuilt, and torchvision built against it"
    assert list(dest.iterdir()) == []  # nothing to build on
    assert list(cache.entries()) == []  # the next lookup misses: torch is pulled or rebuilt
    assert [p.name.startswith(entry.key) for p in cache.damaged_dir.iterdir()] == [True]
