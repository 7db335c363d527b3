"""Hostile share entries: strict hex, a corrupt member in one entry, and a fuzzer that mutates a
share's entries. A pull takes every good entry, names every bad one, and never fails internally.

Bad inputs live in tests/fixtures/hostile/ (hex-values.txt).
"""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import zipfile
from pathlib import Path

import pytest

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes.directory import DirectoryRemote
from srcbuild.cache.signing import TrustedSigners, TrustPolicy
from srcbuild.cache.store import WheelCache
from srcbuild.cache.transfer import pull_entries, push_entries
from srcbuild.errors import CacheIntegrityError, SrcbuildError, UsageError
from srcbuild.limits import check_hex64
from tests.unit.cache.synthetic import make_manifest, make_wheel

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hostile"
UNSIGNED = TrustPolicy(Path("/nonexistent/trusted-signers"), trust_unsigned=True)
HEX_VALUES = [
    ast.literal_eval(line.strip())
    for line in (FIXTURES / "hex-values.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]


@pytest.mark.parametrize("value", HEX_VALUES, ids=range(len(HEX_VALUES)))
def test_hex_is_checked_whole(value: str) -> None:
    with pytest.raises(CacheIntegrityError, match="is not a sha256"):
        check_hex64(value, "fingerprint", "manifest")


def test_a_fingerprint_ending_in_a_newline_is_not_a_manifest(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist")
    data = make_manifest(wheel).to_json()
    data["fingerprint"] += "\n"
    with pytest.raises(CacheIntegrityError, match=r"fingerprint .* is not a sha256"):
        Manifest.loads(json.dumps(data), "m")


def test_a_signer_name_ending_in_a_newline_is_refused(tmp_path: Path) -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice"
    with pytest.raises(UsageError, match="signer name"):
        TrustedSigners(tmp_path / "trusted").add(key, "alice\n", "alice.pub")


def _corrupt_member(wheel: Path, member: str) -> None:
    """Flip bytes in the middle of ``member``'s deflate stream, keeping every size and offset."""
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo(member)
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start, start + info.compress_size):
        data[i] ^= 0x5A
    wheel.write_bytes(bytes(data))


def _share_with_two(tmp_path: Path) -> tuple[DirectoryRemote, Manifest, Manifest]:
    """A share with a good entry and one whose wheel has a corrupt member (sha256 and size that
    match the corrupt bytes: a hostile pusher, not bit rot)."""
    share = DirectoryRemote(str(tmp_path / "share"))
    good_wheel = make_wheel(tmp_path / "good", payload=b"good\n")
    good = make_manifest(good_wheel)
    push_entries([WheelCache(tmp_path / "a").store(good_wheel, good)], share, None)
    version = "torch/version.py"
    bad_wheel = make_wheel(
        tmp_path / "bad", payload=b"bad\n", extra={version: b"cuda = '9.2'\ngit_version = 'aaaa'\n" * 200}
    )
    _corrupt_member(bad_wheel, version)
    bad = make_manifest(bad_wheel, commit="c" * 40)
    entry = share.root / "entries" / bad.fingerprint[:2] / bad.fingerprint / bad.entry_key
    entry.mkdir(parents=True)
    shutil.copy(bad_wheel, entry / bad.wheel)
    (entry / "manifest.json").write_text(bad.dumps())
    return share, good, bad


def test_a_corrupt_member_in_one_entry_does_not_stop_the_others(tmp_path: Path) -> None:
    share, good, bad = _share_with_two(tmp_path)
    results = {t.entry_key: t for t in pull_entries(WheelCache(tmp_path / "b"), share, UNSIGNED)}
    assert results[good.entry_key].action == "fetched"
    assert results[bad.entry_key].action == "rejected"
    assert "member torch/version.py cannot be read" in results[bad.entry_key].detail


MUTATIONS = ("flip", "truncate", "append", "delete", "link-out", "fifo", "empty", "garbage-json")


def _mutate(rng: random.Random, share: Path, victim: Path) -> str:
    files = sorted(p for p in (share / "entries").rglob("*") if p.is_file() and not p.is_symlink())
    target = rng.choice(files)
    kind = rng.choice(MUTATIONS)
    data = target.read_bytes()
    if kind == "flip" and data:
        at = rng.randrange(len(data))
        target.write_bytes(data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :])
    elif kind == "truncate":
        target.write_bytes(data[: rng.randrange(len(data) + 1)])
    elif kind == "append":
        target.write_bytes(data + os.urandom(rng.randrange(1, 5000)))
    elif kind == "delete":
        target.unlink()
    elif kind == "link-out":
        target.unlink()
        target.symlink_to(victim / "secret")
    elif kind == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "garbage-json" and target.name == "manifest.json" and data.startswith(b"{") and data.endswith(b"}"):
        try:
            doc = json.loads(data)
        except ValueError:
            return f"unchanged {target.relative_to(share)}"
        key = rng.choice(sorted(doc))
        doc[key] = rng.choice([None, -1, "../../x", "a" * 64 + "\n", [], {"a": 1}, 10**30])
        target.write_text(json.dumps(doc))
    return f"{kind} {target.relative_to(share)}"


def test_a_fuzzed_share_is_pulled_without_an_internal_error(tmp_path: Path) -> None:
    """120 shares, each with one to three random mutations of its entries' files."""
    share, _good, _bad = _share_with_two(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret").write_bytes(b"not yours")
    pristine = tmp_path / "pristine"
    shutil.copytree(share.root, pristine, symlinks=True)
    rng = random.Random(21)
    outcomes: dict[str, int] = {}
    for i in range(120):
        shutil.rmtree(share.root)
        shutil.copytree(pristine, share.root, symlinks=True)
        done = [_mutate(rng, share.root, victim) for _ in range(rng.randint(1, 3))]
        local = tmp_path / "local" / str(i)
        try:
            results = pull_entries(WheelCache(local), DirectoryRemote(str(share.root)), UNSIGNED)
        except SrcbuildError as exc:  # a refusal of the whole share is one line, never a traceback
            outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
            continue
        except Exception as exc:  # pragma: no cover - the failure this test exists for
            raise AssertionError(f"{done}: {type(exc).__name__}: {exc}") from exc
        for t in results:
            outcomes[t.action] = outcomes.get(t.action, 0) + 1
        assert (victim / "secret").read_bytes() == b"not yours"
        for entry in WheelCache(local).entries():  # whatever arrived is intact
            entry.check()
    assert outcomes.get("fetched", 0) > 0 and outcomes.get("rejected", 0) + outcomes.get("unusable", 0) > 0
