"""Racing builders, a writer killed mid-write, several writers on one shared directory."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from srcbuild.cache import store as store_module
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes.directory import DirectoryRemote
from srcbuild.cache.store import WheelCache
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration
fork = multiprocessing.get_context("fork")


def _builder(root: str, wheel: str, manifest_text: str, builds: str, results: multiprocessing.Queue) -> None:
    """What a build command does: lock, look up again, build only on a miss, store."""
    cache = WheelCache(Path(root))
    manifest = Manifest.loads(manifest_text)
    with cache.build_lock(manifest.fingerprint):
        entry = cache.lookup(manifest.fingerprint, [])
        if entry is None:
            Path(builds, f"built-by-{os.getpid()}").touch()
            time.sleep(0.5)  # the "build"
            entry = cache.store(Path(wheel), manifest)
    results.put(str(entry.path))


def test_racing_builders_build_once(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist")
    manifest = make_manifest(wheel)
    builds = tmp_path / "builds"
    builds.mkdir()
    results: multiprocessing.Queue = fork.Queue()
    procs = [
        fork.Process(target=_builder, args=(str(tmp_path / "c"), str(wheel), manifest.dumps(), str(builds), results))
        for _ in range(6)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    paths = {results.get(timeout=5) for _ in procs}
    assert len(list(builds.iterdir())) == 1
    assert len(paths) == 1
    assert len(list(WheelCache(tmp_path / "c").entries())) == 1


def _killed_writer(root: str, wheel: str, manifest_text: str, ready: multiprocessing.Event) -> None:
    def half_copy(src: Path, dst: Path) -> None:
        data = Path(src).read_bytes()
        with open(dst, "wb") as handle:
            handle.write(data[: len(data) // 2])
            handle.flush()
        ready.set()
        time.sleep(60)  # killed here, in the middle of the write

    store_module.copy_synced = half_copy  # type: ignore[assignment]
    WheelCache(Path(root)).store(Path(wheel), Manifest.loads(manifest_text))


def test_a_writer_killed_mid_write_leaves_no_entry(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", payload=os.urandom(1 << 20))
    manifest = make_manifest(wheel)
    root = tmp_path / "c"
    ready = fork.Event()
    proc = fork.Process(target=_killed_writer, args=(str(root), str(wheel), manifest.dumps(), ready))
    proc.start()
    assert ready.wait(timeout=30)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=10)
    assert proc.exitcode == -signal.SIGKILL

    # the half-written staging directory (and its lock file) is out of sight of every lookup
    assert len(list((root / "tmp").iterdir())) == 2
    reader = WheelCache(root, create=False)
    assert reader.lookup(manifest.fingerprint, []) is None
    assert list(reader.entries()) == [] and list(reader.damaged()) == []
    # the next process that opens the store removes it at once: its writer's lock died with it
    cache = WheelCache(root)
    assert list(cache.staging_dir.iterdir()) == []
    entry = cache.store(wheel, manifest)
    entry.check()
    assert cache.lookup(manifest.fingerprint, []) == entry


def _pusher(share: str, root: str, barrier: multiprocessing.Barrier) -> None:
    entry = next(WheelCache(Path(root)).entries())
    barrier.wait()
    DirectoryRemote(share).push(entry)


def test_several_writers_on_one_shared_directory(tmp_path: Path) -> None:
    roots = []
    for i in range(4):  # four machines; two built the same entry
        wheel = make_wheel(tmp_path / f"dist{i}", payload=f"machine {i % 3}".encode())
        root = tmp_path / f"machine{i}"
        WheelCache(root).store(wheel, make_manifest(wheel, commit=str(i % 3) * 40))
        roots.append(root)
    share = tmp_path / "share"
    barrier = fork.Barrier(len(roots))
    procs = [fork.Process(target=_pusher, args=(str(share), str(r), barrier)) for r in roots]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    shared = WheelCache(share)
    entries = list(shared.entries())
    assert len(entries) == 3
    for entry in entries:
        entry.check()
    assert list(shared.staging_dir.iterdir()) == []
