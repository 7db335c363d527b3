"""The local store: atomic layout, arch-aware lookup, idempotence, integrity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import WheelCache
from srcbuild.capability import ComputeCapability
from srcbuild.errors import CacheIntegrityError
from tests.unit.cache.synthetic import make_manifest, make_wheel


def cc(text: str) -> ComputeCapability:
    return ComputeCapability.parse(text)


def test_store_writes_the_layout_and_tag(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    log = tmp_path / "build.log"
    log.write_text("[1/1] Linking\n")
    manifest = make_manifest(wheel)
    entry = cache.store(wheel, manifest, log)
    assert (tmp_path / "store" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    fp = manifest.fingerprint
    assert entry.path == tmp_path / "store" / "entries" / fp[:2] / fp / manifest.entry_key
    assert sorted(p.name for p in entry.path.iterdir()) == ["build.log", "manifest.json", "stamp.json", wheel.name]
    assert entry.log_path is not None and entry.log_path.read_text() == "[1/1] Linking\n"
    data = json.loads((entry.path / "manifest.json").read_text())
    assert data["kernels"] == {"sass": [30], "ptx": []}
    assert data["recipe"]["name"] == "kepler-cu92"
    assert data["local_version"] == "cu92.sm30"
    assert Manifest.read(entry.path / "manifest.json") == entry.manifest
    assert list(cache.staging_dir.iterdir()) == []


def test_lookup_is_arch_aware(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    manifest = make_manifest(wheel, sass=(30, 35))
    cache.store(wheel, manifest)
    fp = manifest.fingerprint
    assert cache.lookup(fp, [cc("3.0")]) is not None
    assert cache.lookup(fp, [cc("3.0"), cc("3.5")]) is not None
    assert cache.lookup(fp, [cc("3.7")]) is not None  # sm_35 SASS runs on 3.7 (same major, higher minor)
    assert cache.lookup(fp, [cc("5.0")]) is None  # no SASS for Maxwell and no PTX
    assert cache.lookup(fp, []) is not None
    assert cache.lookup("0" * 64, [cc("3.0")]) is None


def test_ptx_serves_newer_gpus(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    manifest = make_manifest(wheel, sass=(35,), ptx=(35,))
    cache.store(wheel, manifest)
    assert cache.lookup(manifest.fingerprint, [cc("5.2")]) is not None
    assert cache.lookup(manifest.fingerprint, [cc("3.0")]) is None  # PTX 3.5 cannot run on 3.0


def test_lookup_prefers_the_newest_entry_that_serves(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    old = make_wheel(tmp_path / "a", payload=b"old")
    new = make_wheel(tmp_path / "b", payload=b"new")
    narrow = make_wheel(tmp_path / "c", payload=b"narrow")
    cache.store(old, make_manifest(old, sass=(30, 35), commit="1" * 40, created=1000.0))
    cache.store(new, make_manifest(new, sass=(30, 35), commit="2" * 40, created=2000.0))
    cache.store(narrow, make_manifest(narrow, sass=(35,), commit="3" * 40, created=3000.0))
    fp = make_manifest(old).fingerprint
    assert len(cache.entries_for(fp)) == 3
    assert cache.lookup(fp, [cc("3.0")]).manifest.resolved["source_commit"] == "2" * 40  # sm_35 cannot run on 3.0
    assert cache.lookup(fp, [cc("3.5")]).manifest.resolved["source_commit"] == "3" * 40


def test_store_is_idempotent(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    manifest = make_manifest(wheel)
    first = cache.store(wheel, manifest)
    mtime = (first.path / "manifest.json").stat().st_mtime_ns
    second = cache.store(wheel, manifest)
    assert second.path == first.path
    assert (first.path / "manifest.json").stat().st_mtime_ns == mtime
    assert len(list(cache.entries())) == 1


def test_store_rejects_a_wheel_that_differs_from_its_manifest(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    manifest = make_manifest(wheel)
    with open(wheel, "r+b") as handle:
        handle.seek(10)
        byte = handle.read(1)
        handle.seek(10)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CacheIntegrityError, match=r"torch-1\.7\.1-cp38-cp38-linux_x86_64\.whl: sha256 \w+ does not"):
        cache.store(wheel, manifest)
    assert list(cache.entries()) == []
    assert list(cache.staging_dir.iterdir()) == []


def test_entry_check_finds_corruption(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    entry = cache.store(wheel, make_manifest(wheel))
    entry.check()
    entry.wheel_path.write_bytes(entry.wheel_path.read_bytes() + b"x")
    with pytest.raises(CacheIntegrityError, match="the manifest says"):
        entry.check()


def test_staging_leftovers_and_damaged_entries_are_invisible(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    manifest = make_manifest(wheel)
    half = cache.staging_dir / "abc-half"
    half.mkdir(parents=True)
    (half / wheel.name).write_bytes(b"half a wheel")
    damaged = cache.fingerprint_dir(manifest.fingerprint) / ("d" * 64)
    damaged.mkdir(parents=True)
    (damaged / "manifest.json").write_text("{not json")
    assert cache.lookup(manifest.fingerprint, []) is None
    assert list(cache.entries()) == []
    assert [p for p, _ in cache.damaged()] == [damaged]
    assert cache.clean_staging() == 1  # nobody holds the lock of the half-written directory
    assert list(cache.staging_dir.iterdir()) == []


def test_remove_and_find(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    entry = cache.store(wheel, make_manifest(wheel))
    assert cache.find(entry.key[:8]) == [entry]
    assert cache.find(entry.fingerprint[:8]) == [entry]
    assert cache.find(wheel.name) == [entry]
    assert cache.find("zzz") == []
    cache.remove(entry)
    assert list(cache.entries()) == []
    assert not cache.fingerprint_dir(entry.fingerprint).exists()


def test_tampered_entry_key_is_detected(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    entry = cache.store(wheel, make_manifest(wheel))
    data = json.loads((entry.path / "manifest.json").read_text())
    data["resolved"]["arch"] = ["3.0", "5.0"]
    (entry.path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(CacheIntegrityError, match=r"entry_key \w+ does not match its resolved facts"):
        Manifest.read(entry.path / "manifest.json")
