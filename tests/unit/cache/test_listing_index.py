"""The listing index (``cache.index``): the same answer as reading every manifest, kept right by
each listing, never trusted when it is not this user's own, rebuilt when damaged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from srcbuild.cache import index as index_module
from srcbuild.cache.index import INDEX_NAME, EntrySummary, find, summaries
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import WheelCache
from tests.unit.cache.synthetic import make_manifest, make_wheel


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WheelCache:
    monkeypatch.setattr(index_module, "SETTLED_SECONDS", -1.0)  # rows of entries made just now are kept
    store = WheelCache(tmp_path / "store")
    os.chmod(store.root, 0o700)
    for i, (sass, ptx) in enumerate((((30,), (30,)), ((35, 37), ()), ((50,), ()))):
        wheel = make_wheel(tmp_path / f"d{i}", version="1.7.1+cu92.sm30", payload=b"x" * (1000 * (i + 1)))
        store.store(wheel, make_manifest(wheel, sass=sass, ptx=ptx, commit=str(i) * 40, created=1000.0 + i))
    return store


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The manifests read (``Manifest.read`` still reads them)."""
    seen: list[Path] = []
    original = Manifest.read.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Manifest], path: Path) -> Manifest:
        seen.append(path)
        return original(cls, path)

    monkeypatch.setattr(Manifest, "read", classmethod(counting))
    return seen


def expected(cache: WheelCache) -> list[EntrySummary]:
    """What reading every manifest says (the store's own walk)."""
    from srcbuild.cache.maintenance import entry_size

    rows = [EntrySummary.of(e, entry_size(e)) for e in cache.entries()]
    return sorted(rows, key=lambda s: s.created, reverse=True)


def test_same_answer_as_the_manifests_and_kept(cache: WheelCache, reads: list[Path]) -> None:
    first = summaries(cache)
    assert first == expected(cache)
    assert [s.sass for s in first] == [(50,), (35, 37), (30,)]
    assert (cache.root / INDEX_NAME).is_file()
    assert oct((cache.root / INDEX_NAME).stat().st_mode & 0o777) == "0o600"
    reads.clear()
    assert summaries(cache) == first
    assert reads == []  # the second listing read no manifest


def test_follows_every_change(cache: WheelCache, tmp_path: Path, reads: list[Path]) -> None:
    before = summaries(cache)
    gone = before[0]
    cache.discard(gone.path)
    wheel = make_wheel(tmp_path / "new", version="1.7.1+cu92.sm30")
    cache.store(wheel, make_manifest(wheel, sass=(61,), commit="9" * 40, created=2000.0))
    reads.clear()
    after = summaries(cache)
    assert after == expected(cache)
    assert gone.key not in {s.key for s in after}
    assert after[0].sass == (61,)
    assert len(reads) == 1 + 3  # the new entry, then expected()'s three


def test_a_manifest_changed_in_place_is_read_again(cache: WheelCache) -> None:
    entry = summaries(cache)[0]
    manifest = entry.path / "manifest.json"
    text = manifest.read_text().replace('"created": 1002.0', '"created": 3000.0')
    manifest.write_text(text)  # same size, new mtime and ctime
    assert summaries(cache)[0].created == 3000.0


def test_a_wheel_changed_in_place_changes_its_size(cache: WheelCache) -> None:
    entry = summaries(cache)[0]
    with open(entry.path / entry.wheel, "ab") as handle:
        handle.write(b"more")
    assert {s.key: s.size for s in summaries(cache)}[entry.key] == entry.size + 4


@pytest.mark.parametrize("damage", [b"not a database at all" * 100, b""])
def test_a_damaged_index_is_rebuilt(cache: WheelCache, damage: bytes) -> None:
    good = summaries(cache)
    (cache.root / INDEX_NAME).write_bytes(damage)
    assert summaries(cache) == good
    assert summaries(cache) == good


def test_an_index_others_can_write_is_not_trusted(cache: WheelCache, reads: list[Path]) -> None:
    summaries(cache)
    os.chmod(cache.root / INDEX_NAME, 0o666)
    reads.clear()
    assert summaries(cache) == expected(cache)
    assert len(reads) == 3 + 3  # every manifest, every time


def test_an_index_that_lies_is_corrected(cache: WheelCache, tmp_path: Path) -> None:
    """An index copied from another store (stamps that do not match here) is not believed."""
    summaries(cache)
    other = WheelCache(tmp_path / "other")
    os.chmod(other.root, 0o700)
    shutil.copytree(cache.entries_dir, other.entries_dir)
    shutil.copy(cache.root / INDEX_NAME, other.root / INDEX_NAME)
    for path in other.entry_dirs():
        manifest = Path(path) / "manifest.json"
        manifest.write_text(manifest.read_text().replace('"package": "torch"', '"package": "torch" '))
    assert summaries(other) == expected(other)


def test_links_are_refused_as_the_store_refuses_them(cache: WheelCache, tmp_path: Path) -> None:
    shard = next(p for p in cache.entries_dir.iterdir())
    (shard / "elsewhere").symlink_to(tmp_path)
    refused: list[tuple[str, str]] = []
    assert len(summaries(cache, refused)) == 3
    assert refused == [(str((shard / "elsewhere").relative_to(cache.root)), "a symbolic link; not followed")]


def test_find_reads_only_the_matches(cache: WheelCache, reads: list[Path]) -> None:
    keys = [s.key for s in summaries(cache)]
    reads.clear()
    found = find(cache, keys[1][:10])
    assert [e.key for e in found] == [keys[1]]
    assert len(reads) == 1
    assert find(cache, "  ") == []


def test_a_read_only_store_still_lists(cache: WheelCache, tmp_path: Path) -> None:
    read_only = WheelCache(cache.root, create=False)
    (cache.root / INDEX_NAME).unlink(missing_ok=True)
    os.chmod(cache.root, 0o500)
    try:
        assert summaries(read_only) == expected(cache)
    finally:
        os.chmod(cache.root, 0o700)


def test_a_row_of_another_shape_is_read_again(cache: WheelCache) -> None:
    import sqlite3

    good = summaries(cache)
    with sqlite3.connect(cache.root / INDEX_NAME) as db:
        db.execute("UPDATE entries SET row = ?", ('["too", "short"]',))
    assert summaries(cache) == good
