"""The local store serves only what it can vouch for: hits checked, settings checked, bombs refused."""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path

import pytest

import srcbuild.cache.store as store_module
from srcbuild.cache.staging import clean_dead, staging_dir
from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.errors import CacheIntegrityError
from srcbuild.limits import MAX_RATIO, check_member
from tests.unit.cache.synthetic import catalog_recipe, make_manifest, make_wheel


def flip(path: Path, at: int = 60) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_damaged_hit_is_a_miss_with_a_warning_and_moved_aside(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    entry = cache.store(wheel, make_manifest(wheel))
    assert cache.lookup(entry.fingerprint, [], None) == entry
    flip(entry.wheel_path)
    warnings: list[str] = []
    assert cache.lookup(entry.fingerprint, [], warnings.append) is None
    (moved,) = list((tmp_path / "store" / "damaged").iterdir())
    assert warnings == [
        f"cache entry {entry.key[:12]}: {wheel.name} has sha256 "
        f"{store_module.sha256_file(moved / wheel.name)}, the manifest says {entry.manifest.sha256}; "
        f"moved aside to {moved}, not used"
    ]
    assert not entry.path.exists() and list(cache.entries()) == []


def test_the_fast_path_trusts_the_file_identity_and_rehashes_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    entry = cache.store(wheel, make_manifest(wheel))
    hashed: list[Path] = []
    real = store_module.sha256_file
    monkeypatch.setattr(store_module, "sha256_file", lambda p: hashed.append(p) or real(p))
    for _ in range(3):
        assert cache.lookup(entry.fingerprint, [], None) == entry
    assert hashed == []  # the identity recorded at store time: no re-hash
    st = os.stat(entry.wheel_path)
    os.utime(entry.wheel_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # touched, same bytes
    assert cache.lookup(entry.fingerprint, [], None) == entry
    assert hashed == [entry.wheel_path]  # re-hashed once, found intact, stamp renewed
    assert cache.lookup(entry.fingerprint, [], None) == entry
    assert hashed == [entry.wheel_path]


def test_a_rotten_wheel_with_its_size_and_mtime_kept_is_rehashed_and_moved_aside(tmp_path: Path) -> None:
    # one byte flipped in place, the mtime put back: size and mtime are those of the stamp, but
    # the write (and the utime) set the ctime, so the identity differs and the wheel is re-hashed
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    entry = cache.store(wheel, make_manifest(wheel))
    assert cache.lookup(entry.fingerprint, [], None) == entry
    st = os.stat(entry.wheel_path)
    with open(entry.wheel_path, "r+b") as handle:
        handle.seek(60)
        byte = handle.read(1)
        handle.seek(60)
        handle.write(bytes([byte[0] ^ 0x01]))
    os.utime(entry.wheel_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(entry.wheel_path)
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    warnings: list[str] = []
    assert cache.lookup(entry.fingerprint, [], warnings.append) is None
    assert len(warnings) == 1 and "moved aside to" in warnings[0] and "not used" in warnings[0]
    assert list(cache.entries()) == [] and len(list((tmp_path / "store" / "damaged").iterdir())) == 1


def test_an_old_stamp_of_size_and_mtime_is_hashed_once_more(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    wheel = make_wheel(tmp_path / "dist")
    entry = cache.store(wheel, make_manifest(wheel))
    st = os.stat(entry.wheel_path)
    old = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": entry.manifest.sha256}
    (entry.path / "stamp.json").write_text(json.dumps(old))
    flip(entry.wheel_path)
    os.utime(entry.wheel_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache.lookup(entry.fingerprint, [], None) is None


def test_a_wheel_from_other_settings_is_not_stored(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "store")
    recipe = catalog_recipe()  # kepler-cu92: torch v1.7.1, CUDA 9.2, cp38
    cases = {
        "torchvision-1.7.1-cp38-cp38-linux_x86_64": "it is a torchvision wheel, the fingerprint is for torch",
        "torch-1.8.0-cp38-cp38-linux_x86_64": "its version 1.8.0 is not the release of tag v1.7.1",
        "torch-1.7.1-cp39-cp39-linux_x86_64": "it is for cp39, the fingerprint for cp38",
    }
    for stem, problem in cases.items():
        name, version, tag = stem.split("-", 2)
        wheel = make_wheel(tmp_path / stem, name=name, version=version, tag=tag)
        manifest = make_manifest(wheel, recipe)
        manifest = type(manifest)(
            **{**manifest.__dict__, "key_inputs": make_manifest(make_wheel(tmp_path / "ref"), recipe).key_inputs}
        )
        with pytest.raises(CacheIntegrityError) as info:
            cache.store(wheel, manifest)
        assert problem in info.value.message
        assert info.value.hint == "it was not stored; build it again with `srcbuild " + name + " --recipe kepler-cu92`"
    # torch's own version.py says which CUDA and commit it was built with
    other = make_wheel(tmp_path / "cu118", extra={"torch/version.py": b"__version__ = '1.7.1'\ncuda = '11.8'\n"})
    says = re.escape("torch/version.py says cuda '11.8', the fingerprint says '9.2'")
    with pytest.raises(CacheIntegrityError, match=says):
        cache.store(other, make_manifest(other, recipe))
    commit = make_wheel(tmp_path / "git", extra={"torch/version.py": b"cuda = '9.2'\ngit_version = 'deadbeefcafe'\n"})
    with pytest.raises(CacheIntegrityError, match="says git_version deadbeefcafe, the manifest says commit aaaa"):
        cache.store(commit, make_manifest(commit, recipe))
    good = make_wheel(tmp_path / "good", extra={"torch/version.py": b"cuda = '9.2'\ngit_version = 'aaaaaaa'\n"})
    cache.store(good, make_manifest(good, recipe)).check()
    assert len(list(cache.entries())) == 1 and list(cache.staging_dir.iterdir()) == []


def bomb_wheel(directory: Path, member: str, size: int) -> Path:
    wheel = make_wheel(directory)
    info = zipfile.ZipInfo(member)
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(wheel, "a") as zf, zf.open(info, "w", force_zip64=True) as out:
        chunk = bytes(1 << 20)
        for _ in range(size >> 20):
            out.write(chunk)
    return wheel


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path: Path) -> None:
    wheel = bomb_wheel(tmp_path / "dist", "torch/version.py", 64 << 20)
    assert wheel.stat().st_size < 1 << 20  # 64 MiB of zeros deflate to about 64 KiB
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("torch/version.py")
    with pytest.raises(CacheIntegrityError, match=f"expands {info.file_size // info.compress_size} times"):
        check_member(info, wheel.name)
    assert info.file_size // info.compress_size > MAX_RATIO
    cache = WheelCache(tmp_path / "store")
    with pytest.raises(CacheIntegrityError, match="more than the limit of 1048576"):
        cache.store(wheel, make_manifest(wheel))  # version.py is read with a 1 MiB limit
    assert list(cache.entries()) == []


def test_a_bad_crc_is_a_clean_error_in_cache_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = make_wheel(tmp_path / "dist", payload=b"0123456789" * 100)
    data = bytearray(wheel.read_bytes())
    at = data.index(b"torch/_C.so") + len("torch/_C.so") + 5  # inside the member's (deflated) data
    data[at] ^= 0xFF
    wheel.write_bytes(bytes(data))
    cache = WheelCache(Path(os.environ["SRCBUILD_CACHE_DIR"]))
    cache.store(wheel, make_manifest(wheel))  # the wheel as it is now, damaged inside
    assert main(["cache", "index", "--out", str(tmp_path / "idx")]) == 7
    err = capsys.readouterr().err
    assert err.startswith(f"error: {wheel.name}: member torch/_C.so cannot be read (")


def test_staging_of_dead_writers_goes_on_the_next_run_and_live_ones_stay(tmp_path: Path) -> None:
    tmp = tmp_path / "store" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "pull-123-dead").mkdir()  # a killed writer: nobody holds its lock
    (tmp / "pull-123-dead" / "download.whl").write_bytes(b"x" * 1000)
    (tmp / "orphan-1.lock").write_text("")  # died between taking the lock and making the directory
    with staging_dir(tmp, "pull-") as live:
        (live / "download.whl").write_bytes(b"half")
        cache = WheelCache(tmp_path / "store")  # the next run
        assert sorted(p.name for p in tmp.iterdir()) == sorted([live.name, live.name + ".lock"])
        assert clean_dead(tmp) == 0
        assert (live / "download.whl").exists()
    assert list(tmp.iterdir()) == []
    assert cache.clean_staging() == 0


def test_another_machines_staging_on_a_share_waits_for_a_day(tmp_path: Path) -> None:
    from srcbuild.cache.staging import FOREIGN_STALE_SECONDS, host_tag

    tmp = tmp_path / "share" / "tmp"
    tmp.mkdir(parents=True)
    fresh = tmp / "pull-1-abc@other-machine"  # its writer may be alive: NFS locks may be local
    old = tmp / "pull-2-def@other-machine"
    mine = tmp / f"pull-3-123@{host_tag()}"
    for path in (fresh, old, mine):
        path.mkdir()
    day_ago = os.stat(old).st_mtime - FOREIGN_STALE_SECONDS - 1
    os.utime(old, (day_ago, day_ago))
    assert clean_dead(tmp) == 2
    assert [p.name for p in tmp.iterdir()] == [fresh.name]


def test_a_hit_names_the_source_commit_this_machine_knows(tmp_path: Path) -> None:
    # two entries of one fingerprint built from two commits of the tag (a recipe that pins no
    # commit, one entry pulled from another machine): a lookup takes only the commit known here
    from srcbuild.cache.install import find_wheel

    cache = WheelCache(tmp_path / "store")
    ours, theirs = "a" * 40, "c" * 40
    first = make_wheel(tmp_path / "ours")
    mine = cache.store(first, make_manifest(first, commit=ours, created=1.0))
    other = make_wheel(tmp_path / "theirs", payload=b"another source")
    foreign = cache.store(other, make_manifest(other, commit=theirs, created=2.0))
    assert mine.fingerprint == foreign.fingerprint and mine.key != foreign.key
    recipe = catalog_recipe()

    def found(commit: str | None) -> str | None:
        hit = find_wheel(cache, recipe, "torch", [], mine.fingerprint, environ={}, source_commit=commit)
        return hit.entry.key if hit is not None else None

    assert found(ours) == mine.key
    assert found(theirs) == foreign.key
    assert found("d" * 40) is None
    assert found(None) == foreign.key  # nothing known here: the newest
