"""Signed entries with real ssh-keygen keys: a swapped wheel+sha, a second signer, unsigned entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from srcbuild.cache.remotes.s3 import S3Remote
from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.errors import HostError
from srcbuild.files import sha256_file
from tests.integration.cache.conftest import make_key
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration


def words(text: str) -> str:
    """The output's words, whatever its wrapping to 80 columns."""
    return " ".join(text.split())


def machine(tmp_path: Path, name: str, payload: bytes) -> Path:
    """A machine's cache holding one wheel built from ``payload``."""
    wheel = make_wheel(tmp_path / f"dist-{name}", payload=payload)
    cache_dir = tmp_path / name
    WheelCache(cache_dir).store(wheel, make_manifest(wheel, commit=name[0] * 40))  # alice, bob, carol: hex
    return cache_dir


def swap_wheel(entry_dir: Path, manifest_name: str = "manifest.json") -> None:
    """What an attacker with write access to the remote does: a new wheel, and its sha256 and size."""
    manifest_path = entry_dir / manifest_name
    data = json.loads(manifest_path.read_text())
    wheel = entry_dir / data["wheel"]
    evil = make_wheel(entry_dir / "evil", payload=b"evil kernels\n")
    wheel.write_bytes(evil.read_bytes())
    data["sha256"], data["size"] = sha256_file(wheel), wheel.stat().st_size
    manifest_path.write_text(json.dumps(data, indent=2))


def pull(remote: str, cache: Path, *extra: str) -> list[str]:
    return ["cache", "pull", "--remote", remote, "--cache-dir", str(cache), *extra]


def test_directory_remote_signatures(tmp_path: Path, signer: Path, capsys: pytest.CaptureFixture[str]) -> None:
    share = tmp_path / "share"
    share.mkdir()
    cache_a = machine(tmp_path, "alice", b"alice's build\n")
    assert main(["cache", "push", "--remote", str(share), "--cache-dir", str(cache_a)]) == 0
    assert capsys.readouterr().out.startswith("sent")
    (entry_dir,) = [p.parent for p in share.rglob("manifest.json")]
    assert (entry_dir / "manifest.json.sig").read_text().startswith("-----BEGIN SSH SIGNATURE-----")

    # a signed entry by a trusted signer is accepted
    assert main(pull(str(share), tmp_path / "b1")) == 0
    assert "fetched" in capsys.readouterr().out

    # the wheel and its sha256 swapped together on the share: the signature no longer matches
    swap_wheel(entry_dir)
    assert main(pull(str(share), tmp_path / "b2")) == 7
    out = words(capsys.readouterr().out)
    assert out.startswith("rejected torch-1.7.1-cp38-cp38-linux_x86_64.whl")
    assert "the signature of alice@lab does not match this manifest" in out
    assert list(WheelCache(tmp_path / "b2").entries()) == []

    # the attacker signs the swapped manifest with a key of their own: not a trusted key
    mallory = make_key(tmp_path / "keys", "mallory")
    evil_cache = tmp_path / "evil-cache"
    evil_wheel = entry_dir / "evil" / "torch-1.7.1-cp38-cp38-linux_x86_64.whl"
    WheelCache(evil_cache).store(evil_wheel, make_manifest(evil_wheel))
    evil_share = tmp_path / "evil-share"
    evil_share.mkdir()
    rc = main(["cache", "push", "--signing-key", str(mallory), "--remote", str(evil_share),
               "--cache-dir", str(evil_cache)])  # fmt: skip
    assert rc == 0
    capsys.readouterr()
    assert main(pull(str(evil_share), tmp_path / "b3")) == 7
    assert "not signed by a trusted key" in words(capsys.readouterr().out)


def test_second_signer_and_unsigned_entries(tmp_path: Path, signer: Path, capsys: pytest.CaptureFixture[str]) -> None:
    share = tmp_path / "share"
    share.mkdir()
    bob = make_key(tmp_path / "keys", "bob")
    cache_b = machine(tmp_path, "bob", b"bob's build\n")
    assert main(["cache", "push", "--signing-key", str(bob), "--remote", str(share), "--cache-dir", str(cache_b)]) == 0
    cache_c = machine(tmp_path, "carol", b"carol's unsigned build\n")
    assert main(["cache", "push", "--unsigned", "--remote", str(share), "--cache-dir", str(cache_c)]) == 0
    capsys.readouterr()

    # only alice is trusted: bob's entry and the unsigned one are refused
    assert main(pull(str(share), tmp_path / "x1", "--json")) == 7
    signers_file = Path(os.environ["SRCBUILD_CONFIG_DIR"]) / "trusted-signers"
    results = {r["detail"].split(": ", 1)[1] for r in json.loads(capsys.readouterr().out)}
    assert results == {"the entry is not signed", f"not signed by a trusted key (see {signers_file})"}

    # bob is trusted once added; the unsigned entry still needs --trust-unsigned
    assert main(["cache", "trust", "add", f"{bob}.pub"]) == 0
    listed = subprocess.run(["ssh-keygen", "-lf", f"{bob}.pub"], capture_output=True, text=True, check=True)
    assert capsys.readouterr().out.startswith(f"trusted bob@lab (ssh-ed25519 {listed.stdout.split()[1]}) in ")
    assert main(pull(str(share), tmp_path / "x2", "--json")) == 7
    by_action = {r["action"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_action["fetched"]["detail"] == "signed by bob@lab"
    assert by_action["rejected"]["detail"].endswith(": the entry is not signed")
    assert main(pull(str(share), tmp_path / "x2", "--trust-unsigned")) == 0
    assert capsys.readouterr().out.endswith("1 fetched, 1 present\n")

    # ls and rm
    assert main(["cache", "trust", "ls", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in listed["signers"]] == ["alice@lab", "bob@lab"]
    assert main(["cache", "trust", "rm", "bob@lab"]) == 0
    assert main(pull(str(share), tmp_path / "x3")) == 7
    assert "2 rejected" in capsys.readouterr().out


def test_s3_swapped_wheel_and_an_aborted_upload(
    tmp_path: Path, signer: Path, s3_bucket: str, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    remote = f"s3://{s3_bucket}/lab"
    monkeypatch.setenv("SRCBUILD_S3_ENDPOINT_URL", moto_endpoint)
    cache_a = machine(tmp_path, "alice", b"alice's build\n")
    assert main(["cache", "push", "--remote", remote, "--cache-dir", str(cache_a)]) == 0
    assert main(pull(remote, tmp_path / "b1")) == 0
    capsys.readouterr()

    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    download = tmp_path / "s3-entry"
    download.mkdir()
    for key in keys:
        if key.startswith("lab/entries/"):
            (download / key.rsplit("/", 1)[1]).write_bytes(client.get_object(Bucket=s3_bucket, Key=key)["Body"].read())
    swap_wheel(download)
    for key in keys:
        name = key.rsplit("/", 1)[1]
        if name.endswith(".whl") or name == "manifest.json":
            client.put_object(Bucket=s3_bucket, Key=key, Body=(download / name).read_bytes())
    assert main(pull(remote, tmp_path / "b2")) == 7
    assert "the signature of alice@lab does not match this manifest" in words(capsys.readouterr().out)

    # an upload that fails half-way leaves no object behind
    cache_c = machine(tmp_path, "carol", b"carol's build\n")
    entry = next(WheelCache(cache_c).entries())
    s3 = S3Remote(f"s3://{s3_bucket}/half", endpoint_url=moto_endpoint)
    real_put = s3.client.put_object

    def failing_put(**kwargs: object) -> object:
        if str(kwargs["Key"]).endswith("manifest.json"):
            raise HostError("the network went away", "try again")
        return real_put(**kwargs)

    monkeypatch.setattr(s3.client, "put_object", failing_put)
    with pytest.raises(HostError):
        s3.push(entry, b"-----BEGIN SSH SIGNATURE-----\n")
    assert client.list_objects_v2(Bucket=s3_bucket, Prefix="half/").get("KeyCount", 0) == 0


def test_http_index_signed_by_its_publisher(tmp_path: Path, signer: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache_a = machine(tmp_path, "alice", b"alice's build\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "srcbuild", "cache", "serve", "--port", "0", "--cache-dir", str(cache_a)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        url = first.rsplit(" at ", 1)[1].strip()[: -len("simple/")]
        assert main(pull(url, tmp_path / "b1")) == 0
        assert words(capsys.readouterr().out).startswith("fetched torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl")
        files = cache_a / "index" / "files"
        (sidecar,) = files.glob("*.manifest.json")
        assert (files / (sidecar.name + ".sig")).is_file()
        # swap the served wheel and its manifest's sha together
        served = json.loads(sidecar.read_text())
        wheel = files / served["wheel"]
        wheel.write_bytes(make_wheel(tmp_path / "evil", payload=b"evil\n").read_bytes())
        served["sha256"], served["size"] = sha256_file(wheel), wheel.stat().st_size
        sidecar.write_text(json.dumps(served))
        assert main(pull(url, tmp_path / "b2")) == 7
        out = words(capsys.readouterr().out)
        assert "the signature of alice@lab does not match this manifest" in out
        assert list(WheelCache(tmp_path / "b2").entries()) == []
    finally:
        proc.terminate()
        proc.wait(timeout=10)
