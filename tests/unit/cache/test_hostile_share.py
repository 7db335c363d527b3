"""A share whose own structure holds symbolic links: srcbuild writes, deletes and walks nothing outside it.

Each attack replaces one directory of a shared store (tmp/, an entries/ shard, entries/ itself,
damaged/) or a lock file with a link to a victim directory holding a user's files, then runs
``cache push`` or ``cache pull``: the command refuses with one line naming the link (exit 7),
and the victim directory is byte for byte what it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cache.remotes.directory import DirectoryRemote
from srcbuild.cache.staging import clean_dead, host_tag
from srcbuild.cache.store import WheelCache
from srcbuild.cache.transfer import push_entries
from srcbuild.cli import main
from tests.unit.cache.synthetic import make_manifest, make_wheel


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def _victim(tmp_path: Path) -> Path:
    """A user's directory: files and subdirectories that look like anything a cleaner might take."""
    victim = tmp_path / "home"
    (victim / "projects" / "thesis").mkdir(parents=True)
    (victim / "projects" / "thesis" / "chapter1.tex").write_text("results\n")
    (victim / ".bashrc").write_text("export PATH\n")
    (victim / "pull-123-abc@otherhost").mkdir()  # named like a staging directory
    (victim / "pull-123-abc@otherhost" / "keep").write_text("x")
    return victim


def _local_entry(tmp_path: Path) -> WheelCache:
    local = WheelCache(Path(os.environ["SRCBUILD_CACHE_DIR"]))
    wheel = make_wheel(tmp_path / "dist")
    local.store(wheel, make_manifest(wheel))
    return local


def _share(tmp_path: Path) -> DirectoryRemote:
    """A share holding one pushed entry."""
    other = WheelCache(tmp_path / "other")
    wheel = make_wheel(tmp_path / "dist-share", payload=b"another build\n")
    share = DirectoryRemote(str(tmp_path / "share"))
    push_entries([other.store(wheel, make_manifest(wheel, commit="c" * 40))], share, None)
    return share


def _link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.rglob("*"), reverse=True):
            child.rmdir() if child.is_dir() else child.unlink()
        path.rmdir()
    path.symlink_to(target, target_is_directory=True)


@pytest.mark.parametrize("nothing_to_send", [False, True])
def test_push_into_a_share_whose_tmp_is_a_link_deletes_nothing(
    tmp_path: Path, nothing_to_send: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    share = _share(tmp_path)
    if not nothing_to_send:
        _local_entry(tmp_path)
    victim = _victim(tmp_path)
    before = _snapshot(victim)
    _link(share.root / "tmp", victim)
    assert main(["cache", "push", "--unsigned", "--remote", str(share.root)]) == 7
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"error: {share.root / 'tmp'} is a symbolic link; srcbuild does not follow links inside a cache"
    assert _snapshot(victim) == before


def test_cleaning_staging_never_follows_a_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    before = _snapshot(victim)
    tmp = tmp_path / "store" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / f"pull-1-aa@{host_tag()}").symlink_to(victim / "projects", target_is_directory=True)
    (tmp / "pull-2-bb.lock").symlink_to(victim / "created-by-lock")  # a lock file that is a link
    clean_dead(tmp)
    assert _snapshot(victim) == before
    assert not (tmp / f"pull-1-aa@{host_tag()}").is_symlink()  # the link itself is removed


def test_push_through_a_linked_shard_writes_nothing_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = _local_entry(tmp_path)
    (entry,) = local.entries()
    share = _share(tmp_path)
    victim = _victim(tmp_path)
    before = _snapshot(victim)
    shard = share.root / "entries" / entry.fingerprint[:2]
    _link(shard, victim)
    assert main(["cache", "push", "--unsigned", "--remote", str(share.root)]) == 7
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: {shard} is a symbolic link; srcbuild does not follow links inside a cache"
    )
    assert _snapshot(victim) == before


def test_a_linked_lock_file_is_refused_not_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = _local_entry(tmp_path)
    (entry,) = local.entries()
    share = _share(tmp_path)
    victim = _victim(tmp_path)
    lock = share.root / "locks" / f"{entry.fingerprint}.lock"
    lock.parent.mkdir(exist_ok=True)
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim / ".bashrc")
    before = _snapshot(victim)
    assert main(["cache", "push", "--unsigned", "--remote", str(share.root)]) == 7
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: {lock} is a symbolic link; srcbuild does not follow links inside a cache"
    )
    assert _snapshot(victim) == before


def test_pull_never_walks_outside_the_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    share = _share(tmp_path)
    _link(share.root / "entries", Path("/"))
    assert main(["cache", "pull", "--trust-unsigned", "--remote", str(share.root)]) == 7
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: {share.root / 'entries'} is a symbolic link; srcbuild does not follow links inside a cache"
    )


def test_linked_entries_inside_a_share_are_left_out_and_named(tmp_path: Path) -> None:
    share = _share(tmp_path)
    victim = _victim(tmp_path)
    (share.root / "entries" / "ff").symlink_to(victim, target_is_directory=True)
    (manifest,) = share.manifests()
    fp_dir = share.reader.fingerprint_dir(manifest.fingerprint)
    (fp_dir / ("0" * 64)).symlink_to(victim / "projects", target_is_directory=True)
    assert [m.entry_key for m in share.manifests()] == [manifest.entry_key]
    assert sorted(share.refused) == [
        (f"entries/{manifest.fingerprint[:2]}/{manifest.fingerprint}/{'0' * 64}", "a symbolic link; not followed"),
        ("entries/ff", "a symbolic link; not followed"),
    ]


def test_moving_a_damaged_entry_aside_never_leaves_the_store(tmp_path: Path) -> None:
    local = _local_entry(tmp_path)
    (entry,) = local.entries()
    victim = _victim(tmp_path)
    before = _snapshot(victim)
    local.damaged_dir.symlink_to(victim, target_is_directory=True)
    entry.wheel_path.write_bytes(b"rot")
    with pytest.raises(Exception, match="damaged is a symbolic link"):
        local.lookup(entry.fingerprint, ())
    assert _snapshot(victim) == before
