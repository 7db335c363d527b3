"""Two pushes of one entry with different bytes: one lands, the other is refused (exit 7) naming
the entry, and the shared copy is never silently replaced."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.files import sha256_file
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration


def _machine(tmp_path: Path, name: str, payload: bytes) -> Path:
    wheel = make_wheel(tmp_path / f"dist-{name}", payload=payload)
    root = tmp_path / name
    WheelCache(root).store(wheel, make_manifest(wheel))  # the same inputs: the same entry key
    return root


def _push(cache: Path, share: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "srcbuild", "cache", "push", "--unsigned", "--remote", str(share)]
    return subprocess.Popen(
        [*argv, "--cache-dir", str(cache)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_concurrent_pushes_of_different_bytes_refuse_the_second(tmp_path: Path) -> None:
    a = _machine(tmp_path, "a", b"built on machine a\n")
    b = _machine(tmp_path, "b", b"built on machine b, other bytes\n")
    entry_a = next(WheelCache(a).entries())
    entry_b = next(WheelCache(b).entries())
    assert entry_a.key == entry_b.key and entry_a.manifest.sha256 != entry_b.manifest.sha256
    share = tmp_path / "share"
    share.mkdir()
    procs = [_push(a, share), _push(b, share)]  # at once
    outs = [p.communicate(timeout=120)[0] for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 7], outs
    winner, loser = (0, 1) if procs[0].returncode == 0 else (1, 0)
    flat = " ".join(outs[loser].split())
    assert f"rejected torch-1.7.1-cp38-cp38-linux_x86_64.whl ({entry_a.key[:12]}): {share}: entry " in flat
    assert "already holds another wheel" in flat and "refused" in flat
    shared = list(WheelCache(share).entries())
    assert len(shared) == 1
    shared[0].check()
    assert sha256_file(shared[0].wheel_path) == (entry_a, entry_b)[winner].manifest.sha256
    # a later push of the same bytes as the shared copy is "present", of other bytes refused again
    again = _push((a, b)[winner], share)
    assert again.wait(timeout=120) == 0
    other = _push((a, b)[loser], share)
    assert other.wait(timeout=120) == 7


def test_an_s3_entry_with_other_bytes_is_refused(
    tmp_path: Path, s3_bucket: str, moto_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from srcbuild.cli import main

    a = _machine(tmp_path, "a", b"built on machine a\n")
    b = _machine(tmp_path, "b", b"built on machine b, other bytes\n")
    remote = ["--remote", f"s3://{s3_bucket}/w", "--s3-endpoint-url", moto_endpoint]
    assert main(["cache", "push", "--unsigned", *remote, "--cache-dir", str(a)]) == 0
    capsys.readouterr()
    assert main(["cache", "push", "--unsigned", *remote, "--cache-dir", str(b)]) == 7
    out = " ".join(capsys.readouterr().out.split())
    assert f"s3://{s3_bucket}/w: entry " in out and "already holds another wheel" in out
    pulled = tmp_path / "c"
    assert main(["cache", "pull", "--trust-unsigned", *remote, "--cache-dir", str(pulled)]) == 0
    (entry,) = WheelCache(pulled).entries()
    assert entry.manifest.sha256 == next(WheelCache(a).entries()).manifest.sha256  # the first push's bytes
