"""Signing without ssh-keygen: keys made and signatures made and checked by srcbuild itself, in
OpenSSH's formats, read by the real ssh-keygen and reading its files (each key type it makes)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from srcbuild.cache import sshsig
from srcbuild.cache.signing import NAMESPACE, payload, sign_manifest, verify_manifest
from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.errors import CacheIntegrityError
from tests.conftest import require_tool
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration

MESSAGE = b'{"package":"torch","sha256":"00"}'


def ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    require_tool("ssh-keygen (openssh-client)", found)
    assert found is not None
    return found


def run_keygen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([ssh_keygen(), *args], input=stdin, capture_output=True)


def allowed(tmp_path: Path, name: str, pub: Path) -> Path:
    signers = tmp_path / "allowed_signers"
    key_type, blob = pub.read_text().split()[:2]
    signers.write_text(f'{name} namespaces="{NAMESPACE}" {key_type} {blob}\n')
    return signers


@pytest.mark.parametrize(("key_type", "bits"), [("ed25519", ""), ("ecdsa", "256"), ("ecdsa", "384"), ("rsa", "3072")])
def test_srcbuild_and_ssh_keygen_read_each_others_signatures(tmp_path: Path, key_type: str, bits: str) -> None:
    key = tmp_path / f"id_{key_type}"
    made = run_keygen(
        "-q", "-t", key_type, *(("-b", bits) if bits else ()), "-N", "", "-C", "alice@lab", "-f", str(key)
    )
    assert made.returncode == 0, made.stderr
    signers = allowed(tmp_path, "alice", Path(f"{key}.pub"))
    private = sshsig.load_private_key(key)
    assert private is not None
    # srcbuild signs, ssh-keygen verifies
    (tmp_path / "sig").write_bytes(sshsig.sign(private, NAMESPACE, MESSAGE))
    checked = run_keygen(
        "-Y", "verify", "-f", str(signers), "-I", "alice", "-n", NAMESPACE, "-s", str(tmp_path / "sig"), stdin=MESSAGE
    )
    assert checked.returncode == 0, checked.stderr
    # ssh-keygen signs, srcbuild verifies: and refuses the same signature over other bytes or namespace
    (tmp_path / "msg").write_bytes(MESSAGE)
    assert run_keygen("-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(tmp_path / "msg")).returncode == 0
    theirs = (tmp_path / "msg.sig").read_bytes()
    blob = sshsig.verify(theirs, NAMESPACE, MESSAGE)
    assert f"{key_type}" in Path(f"{key}.pub").read_text().split()[0] and blob == sshsig.signer_blob(theirs)
    with pytest.raises(sshsig.SignatureError, match="does not match"):
        sshsig.verify(theirs, NAMESPACE, MESSAGE + b" ")
    with pytest.raises(sshsig.SignatureError, match="namespace"):
        sshsig.verify(theirs, "git", MESSAGE)


def test_a_key_srcbuild_makes_is_one_ssh_keygen_uses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "config" / "signing-key"
    assert main(["cache", "key", "new", "--signing-key", str(key), "--comment", "ci@lab"]) == 0
    out = " ".join(capsys.readouterr().out.replace(" \\\n", " ").split())  # a long command goes on after " \\"
    assert out.startswith(f"wrote {key} and {key}.pub") and f"srcbuild cache trust add {key}.pub" in out
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    derived = run_keygen("-y", "-f", str(key))  # ssh-keygen reads the private key and derives its public half
    assert derived.returncode == 0, derived.stderr
    assert derived.stdout.decode().split()[:2] == Path(f"{key}.pub").read_text().split()[:2]
    (tmp_path / "msg").write_bytes(MESSAGE)
    assert run_keygen("-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(tmp_path / "msg")).returncode == 0
    sshsig.verify((tmp_path / "msg.sig").read_bytes(), NAMESPACE, MESSAGE)
    assert main(["cache", "key", "new", "--signing-key", str(key)]) == 2  # never replaced
    assert capsys.readouterr().err.startswith(f"error: {key} exists already")


def test_push_sign_pull_verify_on_a_machine_without_ssh_keygen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """PATH without ssh-keygen and the usual places out of reach: the key is made, a push signs,
    a pull verifies; a swapped manifest is refused."""
    from srcbuild.cache import signing

    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setattr(signing, "SSH_KEYGEN_FALLBACKS", ())
    key = tmp_path / "keys" / "signing-key"
    monkeypatch.setenv("SRCBUILD_SIGNING_KEY", str(key))
    assert main(["cache", "key", "new", "--comment", "alice@lab"]) == 0
    assert main(["cache", "trust", "add", f"{key}.pub"]) == 0
    capsys.readouterr()
    wheel = make_wheel(tmp_path / "dist", payload=os.urandom(512))
    cache_a = tmp_path / "a"
    WheelCache(cache_a).store(wheel, make_manifest(wheel))
    share = tmp_path / "share"
    share.mkdir()
    assert main(["cache", "push", "--remote", str(share), "--cache-dir", str(cache_a)]) == 0, capsys.readouterr().err
    assert main(["cache", "pull", "--remote", str(share), "--cache-dir", str(tmp_path / "b")]) == 0
    assert [p.name for p in (tmp_path / "b").rglob("*.whl")] == [wheel.name]
    manifest = make_manifest(wheel)
    signature = sign_manifest(manifest, key, tmp_path)
    signers = Path(os.environ["SRCBUILD_CONFIG_DIR"]) / "trusted-signers"
    assert verify_manifest(manifest, signature, signers, tmp_path, "the entry") == "alice@lab"
    other = make_manifest(make_wheel(tmp_path / "evil", payload=b"evil\n"))
    assert payload(other) != payload(manifest)
    with pytest.raises(CacheIntegrityError, match="does not match this manifest"):
        verify_manifest(other, signature, signers, tmp_path, "the entry")
