"""The remote registry, the remote list from options and environment, and the directory remote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cache.remotes import RemoteOptions, open_remote, parse_remotes
from srcbuild.cache.remotes.directory import DirectoryRemote
from srcbuild.cache.remotes.http import HttpIndexRemote
from srcbuild.cache.remotes.s3 import S3Remote, split_s3_url
from srcbuild.cache.signing import TrustPolicy
from srcbuild.cache.store import WheelCache
from srcbuild.cache.transfer import pull_entries, pull_entry, push_entries
from srcbuild.errors import CacheIntegrityError, UsageError
from tests.unit.cache.synthetic import make_manifest, make_wheel

UNSIGNED = TrustPolicy(Path("/nonexistent/trusted-signers"), trust_unsigned=True)


def test_registry_by_scheme(tmp_path: Path) -> None:
    assert isinstance(open_remote(str(tmp_path)), DirectoryRemote)
    assert open_remote(f"file://{tmp_path}").root == tmp_path.resolve()  # type: ignore[attr-defined]
    s3 = open_remote("s3://bucket/team/wheels", RemoteOptions(s3_endpoint_url="http://127.0.0.1:9000"))
    assert isinstance(s3, S3Remote) and (s3.bucket, s3.prefix, s3.endpoint_url) == (
        "bucket",
        "team/wheels",
        "http://127.0.0.1:9000",
    )
    http = open_remote("http://wheels.lab:8080/simple/")
    assert isinstance(http, HttpIndexRemote) and http.root == "http://wheels.lab:8080/"


def test_unknown_scheme_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError) as info:
        open_remote("rsync://host/path")
    assert info.value.message == "unknown remote scheme 'rsync' in rsync://host/path"
    assert info.value.hint == (
        "use a directory path or one of: file://, s3://, http://, https://, upload+http://, upload+https://"
    )


def test_s3_url_needs_a_bucket() -> None:
    assert split_s3_url("s3://b") == ("b", "")
    with pytest.raises(UsageError, match="no bucket name"):
        split_s3_url("s3:///prefix")


def test_endpoint_precedence() -> None:
    env = {"AWS_ENDPOINT_URL": "http://aws", "SRCBUILD_S3_ENDPOINT_URL": "http://srcbuild"}
    assert RemoteOptions.resolve("http://cli", environ=env).s3_endpoint_url == "http://cli"
    assert RemoteOptions.resolve(None, environ=env).s3_endpoint_url == "http://srcbuild"
    assert RemoteOptions.resolve(None, environ={"AWS_ENDPOINT_URL": "http://aws"}).s3_endpoint_url == "http://aws"
    assert RemoteOptions.resolve(None, environ={}).s3_endpoint_url is None


def test_remote_list_from_options_and_environment() -> None:
    sep = os.pathsep
    env = {"SRCBUILD_REMOTES": f"s3://b/p{sep}/mnt/share,http://h:8080/{sep}/srv/other"}
    assert parse_remotes(["/first"], env) == ["/first", "s3://b/p", "/mnt/share", "http://h:8080/", "/srv/other"]
    assert parse_remotes([], {}) == []
    assert parse_remotes(["/a", "/a"], {"SRCBUILD_REMOTES": "/a"}) == ["/a"]


def test_directory_round_trip_and_tamper(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist")
    local = WheelCache(tmp_path / "a")
    entry = local.store(wheel, make_manifest(wheel))
    share = DirectoryRemote(str(tmp_path / "share"))
    assert [t.action for t in push_entries([entry], share, None)] == ["sent"]
    assert [t.action for t in push_entries([entry], share, None)] == ["present"]
    other = WheelCache(tmp_path / "b")
    assert [t.action for t in pull_entries(other, share, UNSIGNED)] == ["fetched"]
    assert [t.action for t in pull_entries(other, share, UNSIGNED)] == ["present"]

    remote_wheel = share.store.entry_dir(entry.manifest) / wheel.name
    data = bytearray(remote_wheel.read_bytes())
    data[40] ^= 0x20
    remote_wheel.write_bytes(bytes(data))
    third = WheelCache(tmp_path / "c")
    with pytest.raises(CacheIntegrityError) as info:
        pull_entry(third, share, entry.manifest, UNSIGNED)
    assert info.value.message.startswith(f"{wheel.name} from {share.url}: sha256 ")
    assert list(third.entries()) == [] and list(third.staging_dir.iterdir()) == []


def test_push_skips_a_damaged_local_entry(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist")
    entry = WheelCache(tmp_path / "a").store(wheel, make_manifest(wheel))
    entry.wheel_path.write_bytes(b"garbage")
    share = DirectoryRemote(str(tmp_path / "share"))
    (result,) = push_entries([entry], share, None)
    assert result.action == "rejected" and "the manifest says" in result.detail
    assert share.manifests() == []


def test_http_remote_is_read_only(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist")
    entry = WheelCache(tmp_path / "a").store(wheel, make_manifest(wheel))
    with pytest.raises(UsageError, match="is an HTTP index and is read-only"):
        push_entries([entry], HttpIndexRemote("http://127.0.0.1:1/"), None)


def test_unreachable_http_index_is_not_found() -> None:
    from srcbuild.errors import NotFoundError

    with pytest.raises(NotFoundError) as info:
        HttpIndexRemote("http://127.0.0.1:1/").manifests("0" * 64)
    assert info.value.message.startswith("http://127.0.0.1:1/: cannot read the project list (")
    assert info.value.hint == ("check that `srcbuild cache serve` (or another web server) runs there and is reachable")


def test_a_share_another_push_is_creating_is_pushed_into(tmp_path: Path) -> None:
    """Two pushes into one new directory at once: the second may look while the first's tag is
    still under its temporary name; that directory is being made a store, not a foreign one."""
    share = tmp_path / "share"
    share.mkdir()
    (share / ".CACHEDIR.TAG.4242.0123abcd.tmp").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    DirectoryRemote(str(share)).check(for_push=True)
    (share / "notes.txt").write_text("someone else's file\n")
    with pytest.raises(UsageError, match="not a srcbuild cache"):
        DirectoryRemote(str(share)).check(for_push=True)
