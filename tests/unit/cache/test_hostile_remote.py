"""A hostile or broken remote: names that try to be paths, oversize files, damage. Nothing escapes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from srcbuild.cache.manifest import Manifest, check_wheel_name
from srcbuild.cache.remotes import open_remote
from srcbuild.cache.remotes.directory import DirectoryRemote
from srcbuild.cache.remotes.http import parse_links
from srcbuild.cache.signing import TrustPolicy
from srcbuild.cache.store import WheelCache
from srcbuild.cache.transfer import fetch_first, pull_entries, pull_entry, push_entries
from srcbuild.cli import main
from srcbuild.errors import CacheIntegrityError, HostError, UsageError
from srcbuild.limits import MAX_PAGE, read_limited, safe_file_name
from tests.unit.cache.synthetic import make_manifest, make_wheel

UNSIGNED = TrustPolicy(Path("/nonexistent/trusted-signers"), trust_unsigned=True)
STRICT = TrustPolicy(Path("/nonexistent/trusted-signers"))

HOSTILE_NAMES = [
    "../../../../.bashrc",
    "/tmp/victim.sh",
    "sub/torch-1.7.1-cp38-cp38-linux_x86_64.whl",
    "..\\torch-1.7.1-cp38-cp38-linux_x86_64.whl",
    "..",
    ".torch-1.7.1-cp38-cp38-linux_x86_64.whl",
    "torch-1.7.1-cp38-cp38-linux_x86_64.whl\n",
    "torch-1.7.1-cp38-cp38-linux_x86_64.whl\0",
    "victim.sh",
    "",
    "x" * 300 + ".whl",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_wheel_name_from_outside_is_never_a_path(name: str) -> None:
    with pytest.raises(CacheIntegrityError) as info:
        check_wheel_name(name, "remote manifest")
    assert info.value.message.startswith("remote manifest: wheel ")


def test_plain_names_pass() -> None:
    assert check_wheel_name("torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl", "m").endswith(".whl")
    assert safe_file_name("build.log", "log", "m") == "build.log"
    with pytest.raises(CacheIntegrityError):
        safe_file_name(["a"], "log", "m")


def _shared_entry(tmp_path: Path) -> tuple[DirectoryRemote, Path, dict]:
    wheel = make_wheel(tmp_path / "dist")
    entry = WheelCache(tmp_path / "a").store(wheel, make_manifest(wheel))
    share = DirectoryRemote(str(tmp_path / "share"))
    push_entries([entry], share, None)
    manifest_path = share.store.entry_dir(entry.manifest) / "manifest.json"
    return share, manifest_path, json.loads(manifest_path.read_text())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("wheel", "../../../../victim.sh"),
        ("wheel", "/tmp/srcbuild-victim.sh"),
        ("fingerprint", "../../../etc"),
        ("sha256", "../x"),
        ("size", -1),
        ("size", "12"),
        ("kernels", {"sass": ["../30"]}),
        ("entry_key", ["not", "a", "key"]),
    ],
)
def test_a_directory_remote_with_a_hostile_manifest_writes_nothing(
    tmp_path: Path, field: str, value: object, capsys: pytest.CaptureFixture[str]
) -> None:
    share, manifest_path, data = _shared_entry(tmp_path)
    data[field] = value
    manifest_path.write_text(json.dumps(data))
    victim = tmp_path / "home"
    victim.mkdir()
    other = WheelCache(victim / "cache")
    assert share.manifests() == []  # the entry is never listed, so never fetched
    (refused,) = share.refused  # but it is named, with why
    assert refused[0].startswith("entries/") and refused[1].startswith(f"{share.root}/{refused[0]}/manifest.json: ")
    assert [t.action for t in pull_entries(other, share, UNSIGNED)] == ["unusable"]
    assert sorted(p.name for p in victim.rglob("*") if p.is_file()) == ["CACHEDIR.TAG"]
    assert not Path("/tmp/srcbuild-victim.sh").exists()


def test_a_wheel_larger_than_its_manifest_says_is_stopped(tmp_path: Path) -> None:
    share, manifest_path, data = _shared_entry(tmp_path)
    wheel = manifest_path.parent / data["wheel"]
    wheel.write_bytes(wheel.read_bytes() + b"\0" * 4096)  # one more block than the manifest states
    other = WheelCache(tmp_path / "b")
    with pytest.raises(CacheIntegrityError) as info:
        pull_entry(other, share, Manifest.read(manifest_path), UNSIGNED)
    assert f"is larger than the {data['size']} bytes its manifest states" in info.value.message
    assert list(other.entries()) == [] and list(other.staging_dir.iterdir()) == []


def test_unsigned_entries_are_refused_unless_trusted(tmp_path: Path) -> None:
    share, _manifest_path, _data = _shared_entry(tmp_path)
    other = WheelCache(tmp_path / "b")
    (result,) = pull_entries(other, share, STRICT)
    assert result.action == "rejected"
    assert result.detail.endswith(": the entry is not signed")
    assert list(other.entries()) == [] and list(other.staging_dir.iterdir()) == []
    (result,) = pull_entries(other, share, UNSIGNED)
    assert result.action == "fetched" and result.detail == "signature not checked (--trust-unsigned)"


def test_pull_writes_nothing_into_the_remote(tmp_path: Path) -> None:
    share, _manifest_path, _data = _shared_entry(tmp_path)
    (share.root / "CACHEDIR.TAG").unlink()  # a share some other tool made, or a read-only one
    before = sorted(str(p.relative_to(share.root)) for p in share.root.rglob("*"))
    other = WheelCache(tmp_path / "b")
    reader = DirectoryRemote(str(share.root))
    reader.check()
    assert [t.action for t in pull_entries(other, reader, UNSIGNED)] == ["fetched"]
    assert sorted(str(p.relative_to(share.root)) for p in share.root.rglob("*")) == before


def test_pull_and_push_need_a_srcbuild_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no" / "such"
    assert main(["cache", "pull", "--trust-unsigned", "--remote", str(missing)]) == 9  # nothing there
    assert capsys.readouterr().err == f"error: remote {missing}: no such directory\nhint: check the path\n"
    other = tmp_path / "photos"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"\xff\xd8")
    for command in (["pull", "--trust-unsigned"], ["push", "--unsigned"]):
        assert main(["cache", *command, "--remote", str(other)]) == 2
        assert capsys.readouterr().err == (
            f"error: remote {other}: not a srcbuild cache (no CACHEDIR.TAG from srcbuild, no entries/)\n"
            "hint: point --remote at a directory that `srcbuild cache push` wrote\n"
        )
    assert not (other / "CACHEDIR.TAG").exists()


def test_push_needs_a_signing_key_or_unsigned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "share").mkdir()
    assert main(["cache", "push", "--remote", str(tmp_path / "share")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: no signing key: pushed entries are signed so that others can trust them"
    assert err[1] == "hint: create one with `srcbuild cache key new`, or pass --signing-key KEY (or --unsigned)"


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1]:99999/", "http://", "s3://bucket\n/x"])
def test_a_malformed_remote_url_is_a_usage_error(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError):
        open_remote(url)
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url]) == 2
    assert capsys.readouterr().err.startswith("error: remote ")


def test_a_non_utf8_index_page_is_an_integrity_error() -> None:
    with pytest.raises(CacheIntegrityError, match="the page is not UTF-8 text"):
        parse_links(b"<a href='x'>\xff\xfe</a>", "http://127.0.0.1:1/simple/")
    assert parse_links(b"<a href='x' data-srcbuild-fingerprint='f'>x</a><a", "p") == [
        {"href": "x", "data-srcbuild-fingerprint": "f"}
    ]


class Endless:
    """A reply that never ends: 64 KiB of "<a>" per read, forever."""

    def __init__(self) -> None:
        self.served = 0

    def read(self, size: int = -1, /) -> bytes:
        n = 65536 if size < 0 else min(size, 65536)
        self.served += n
        return (b"<a>" * (n // 3 + 1))[:n]


def test_an_endless_reply_is_cut_at_the_limit() -> None:
    stream = Endless()
    with pytest.raises(HostError, match=f"is larger than {MAX_PAGE} bytes; not read"):
        read_limited(stream, MAX_PAGE, "http://127.0.0.1:1/simple/ (the project list)")
    assert stream.served <= MAX_PAGE + 65536


class Unreachable:
    url = "http://127.0.0.1:1/"
    writable = False

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        raise HostError("http://127.0.0.1:1/: cannot read the project list (Connection refused)", "check it")


def test_an_unreachable_remote_is_a_warning_and_the_next_one_serves(tmp_path: Path) -> None:
    share, manifest_path, _data = _shared_entry(tmp_path)
    manifest = Manifest.read(manifest_path)
    warnings: list[str] = []
    other = WheelCache(tmp_path / "b")
    found = fetch_first(other, [Unreachable(), share], manifest.fingerprint, [], UNSIGNED, warnings.append)  # type: ignore[list-item]
    assert found is not None and found[1] is share
    assert warnings == [
        "remote http://127.0.0.1:1/ skipped: http://127.0.0.1:1/: cannot read the project list (Connection refused)"
    ]
    # a refused entry is a warning too, and the lookup is a miss (a build then builds locally)
    warnings.clear()
    assert fetch_first(WheelCache(tmp_path / "c"), [share], manifest.fingerprint, [], STRICT, warnings.append) is None
    assert len(warnings) == 1 and warnings[0].endswith(": the entry is not signed")


def test_a_directory_remote_with_a_missing_wheel_is_refused(tmp_path: Path) -> None:
    share, manifest_path, data = _shared_entry(tmp_path)
    (manifest_path.parent / data["wheel"]).unlink()
    other = WheelCache(tmp_path / "b")
    (result,) = pull_entries(other, share, UNSIGNED)
    assert result.action == "rejected" and result.detail.endswith("the wheel is missing")
    shutil.rmtree(tmp_path / "share")
    assert share.manifests() == []


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_share_serving_a_fifo_or_a_symlink_is_refused_without_hanging(tmp_path: Path, kind: str) -> None:
    share, manifest_path, data = _shared_entry(tmp_path)
    wheel = manifest_path.parent / data["wheel"]
    wheel.unlink()
    if kind == "fifo":
        os.mkfifo(wheel)  # opening it for reading would block until someone writes
    else:
        secret = tmp_path / "secret"
        secret.write_bytes(b"not for the cache")
        wheel.symlink_to(secret)
    other = WheelCache(tmp_path / "b")
    (result,) = pull_entries(other, share, UNSIGNED)
    assert result.action == "rejected"
    assert result.detail.endswith("; not read")
    assert list(other.entries()) == [] and list(other.staging_dir.iterdir()) == []


def test_a_fingerprint_option_is_never_a_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    share, _manifest_path, _data = _shared_entry(tmp_path)
    assert main(["cache", "pull", "--trust-unsigned", "--remote", str(share.root), "--fingerprint", "../../.."]) == 2
    assert capsys.readouterr().err.startswith("error: --fingerprint '../../..' is not a fingerprint (64 hex digits)")
