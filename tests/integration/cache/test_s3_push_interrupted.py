"""A push to S3 interrupted anywhere leaves nothing a reader takes for an entry, and no object of it
survives the next push; a push still running is never touched by another's cleanup.

Each push runs as its own process (``stalled_push.py``: the real ``srcbuild cache push``, held at
one S3 request of a real moto server) and is killed there with SIGKILL or SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from srcbuild.cache.remotes import s3_staging
from srcbuild.cache.remotes.s3 import S3Remote
from srcbuild.cache.store import CacheEntry, WheelCache
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration

STALLED_PUSH = Path(__file__).with_name("stalled_push.py")
AT_WHEEL_UPLOAD = r"^PUT /[^/]+/w/staging/.*\.whl$"  # the wheel's upload to the staging prefix
AT_PUBLISH = r"^PUT /[^/]+/w/entries/.*/manifest\.json$"  # the manifest's copy: the wheel is in place


def one_entry(directory: Path, version: str, commit: str) -> tuple[Path, CacheEntry]:
    """A cache at ``directory`` holding one entry of a random 256 KiB wheel."""
    recipe_file = host_python_recipe(directory / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(directory / "dist", version=version, tag=host_tag(), payload=os.urandom(256 * 1024))
    cache = directory / "cache"
    entry = WheelCache(cache).store(wheel, make_manifest(wheel, recipe, commit=commit, platform=None))
    return cache, entry


def orphans(client, bucket: str) -> list[str]:
    """Objects no entry accounts for: anything staged, and the objects of an entry without its manifest."""
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
    complete = {k.rsplit("/", 1)[0] for k in keys if k.endswith("/manifest.json") and "/entries/" in k}
    return sorted(k for k in keys if "/staging/" in k or ("/entries/" in k and k.rsplit("/", 1)[0] not in complete))


def start_push(tmp_path: Path, cache: Path, bucket: str, endpoint: str, at: str) -> tuple[subprocess.Popen[str], Path]:
    """A push of ``cache`` held at the first request matching ``at``; (the process, its go-on file)."""
    marker, go = tmp_path / f"held-{time.monotonic_ns()}", tmp_path / f"go-{time.monotonic_ns()}"
    argv = [sys.executable, str(STALLED_PUSH), str(marker), str(go), at, "--"]
    argv += ["cache", "push", "--unsigned", "--remote", f"s3://{bucket}/w", "--s3-endpoint-url", endpoint]
    argv += ["--cache-dir", str(cache)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "the push never reached the request to hold"
        time.sleep(0.05)
    return proc, go


def push(cache: Path, bucket: str, endpoint: str) -> int:
    remote = ["--remote", f"s3://{bucket}/w", "--s3-endpoint-url", endpoint]
    return main(["cache", "push", "--unsigned", *remote, "--cache-dir", str(cache)])


@pytest.mark.parametrize(
    ("sig", "at"),
    [
        (signal.SIGKILL, AT_WHEEL_UPLOAD),
        (signal.SIGKILL, AT_PUBLISH),
        (signal.SIGTERM, AT_WHEEL_UPLOAD),
        (signal.SIGTERM, AT_PUBLISH),
    ],
    ids=["SIGKILL-uploading", "SIGKILL-publishing", "SIGTERM-uploading", "SIGTERM-publishing"],
)
def test_an_interrupted_push_leaves_no_orphan_after_the_next_push(
    tmp_path: Path, s3_bucket: str, moto_endpoint: str, sig: signal.Signals, at: str, capsys
) -> None:
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    reader = S3Remote(f"s3://{s3_bucket}/w", endpoint_url=moto_endpoint)
    cache_x, x = one_entry(tmp_path / "x", "1.7.1", "a" * 40)
    cache_y, y = one_entry(tmp_path / "y", "1.7.1+local", "b" * 40)

    proc, _go = start_push(tmp_path, cache_x, s3_bucket, moto_endpoint, at)
    proc.send_signal(sig)
    out = proc.communicate(timeout=60)[0]
    assert reader.manifests() == []  # a reader sees no entry, whatever the push left
    if sig == signal.SIGTERM:  # srcbuild stopped itself: it deleted what it had written
        assert proc.returncode == 130, out
        assert "error: interrupted" in out
        assert client.list_objects_v2(Bucket=s3_bucket).get("KeyCount", 0) == 0
    else:
        assert proc.returncode == -signal.SIGKILL
        assert orphans(client, s3_bucket) != []  # what a killed push leaves, until the next push

    assert push(cache_y, s3_bucket, moto_endpoint) == 0, capsys.readouterr().err
    assert orphans(client, s3_bucket) == []
    pushed = sorted(m.entry_key for m in reader.manifests())
    if sig == signal.SIGKILL and at == AT_PUBLISH:  # its staging was complete: the next push finished it
        assert pushed == sorted([x.key, y.key])
    else:
        assert pushed == [y.key]


def test_a_running_push_is_not_touched_by_another(
    tmp_path: Path, s3_bucket: str, moto_endpoint: str, capsys
) -> None:
    """A push held in the middle of its wheel's upload, alive on this machine, while another push
    (which sweeps first) runs: the held push then finishes, and both entries are whole."""
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    cache_x, x = one_entry(tmp_path / "x", "1.7.1", "a" * 40)
    cache_y, y = one_entry(tmp_path / "y", "1.7.1+local", "b" * 40)
    proc, go = start_push(tmp_path, cache_x, s3_bucket, moto_endpoint, AT_WHEEL_UPLOAD)
    try:
        staged = orphans(client, s3_bucket)
        assert [k.rsplit("/", 1)[1] for k in staged] == ["lease"]  # its lease, written first
        assert push(cache_y, s3_bucket, moto_endpoint) == 0, capsys.readouterr().err
        assert set(staged) <= set(orphans(client, s3_bucket))  # the running push's staging is intact
        go.write_text("go\n")
        out = proc.communicate(timeout=60)[0]
        assert proc.returncode == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader = S3Remote(f"s3://{s3_bucket}/w", endpoint_url=moto_endpoint)
    assert sorted(m.entry_key for m in reader.manifests()) == sorted([x.key, y.key])
    assert orphans(client, s3_bucket) == []
    wheel_key = f"w/entries/{x.manifest.fingerprint[:2]}/{x.manifest.fingerprint}/{x.key}/{x.manifest.wheel}"
    assert client.get_object(Bucket=s3_bucket, Key=wheel_key)["Body"].read() == x.wheel_path.read_bytes()


def test_another_machines_staging_waits_for_its_lease(
    s3_bucket: str, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staging of a push on another machine is left alone while its lease is fresh, swept once it
    is older than the lease length (by the bucket's clock)."""
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    token = "elsewhere_0b5f7c2e-8d4a-4e5b-9c6d-7e8f9a0b1c2d_4026531836_4242_123456_0123456789ab"
    staged = f"w/staging/{token}/ab/{'ab' * 32}/{'cd' * 32}/torch-1.0-cp38-cp38-linux_x86_64.whl"
    client.put_object(Bucket=s3_bucket, Key=f"w/staging/{token}/lease", Body=b"{}")
    client.put_object(Bucket=s3_bucket, Key=staged, Body=b"half a wheel")
    remote = S3Remote(f"s3://{s3_bucket}/w", endpoint_url=moto_endpoint)
    assert s3_staging.sweep_staging(remote) == []  # a fresh lease: maybe still uploading
    monkeypatch.setattr(s3_staging, "LEASE_SECONDS", 0.0)
    assert s3_staging.sweep_staging(remote) == [staged, f"w/staging/{token}/lease"]
    assert client.list_objects_v2(Bucket=s3_bucket).get("KeyCount", 0) == 0
