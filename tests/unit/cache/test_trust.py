"""The trusted-signers file: ``srcbuild cache trust add|ls|rm`` (no ssh-keygen needed to manage it)."""

from __future__ import annotations

import base64
import json
import os
import struct
from pathlib import Path

import pytest

from srcbuild.cache.signing import PublicKey, TrustedSigners, trusted_signers_path
from srcbuild.cli import main


def ed25519_line(seed: int, comment: str = "alice@lab") -> str:
    """An ssh-ed25519 public key line (the key bytes are arbitrary: only its format matters here)."""
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + bytes([seed]) * 32
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


def test_add_ls_rm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = tmp_path / "alice.pub"
    pub.write_text(ed25519_line(1) + "\n")
    assert main(["cache", "trust", "add", str(pub)]) == 0
    path = trusted_signers_path(os.environ)
    assert path == Path(os.environ["SRCBUILD_CONFIG_DIR"]) / "trusted-signers"
    fingerprint = PublicKey.parse(ed25519_line(1)).fingerprint
    assert capsys.readouterr().out == f"trusted alice@lab (ssh-ed25519 {fingerprint}) in {path}\n"
    assert main(["cache", "trust", "add", ed25519_line(2, "ci runner"), "--name", "ci"]) == 0
    assert path.read_text().splitlines()[1:] == [
        'alice@lab namespaces="srcbuild-cache" ' + " ".join(ed25519_line(1).split()[:2]),
        'ci namespaces="srcbuild-cache" ' + " ".join(ed25519_line(2).split()[:2]),
    ]
    capsys.readouterr()
    assert main(["cache", "trust", "ls", "--json"]) == 0
    assert [s["name"] for s in json.loads(capsys.readouterr().out)["signers"]] == ["alice@lab", "ci"]
    assert main(["cache", "trust", "rm", fingerprint]) == 0
    assert [s.name for s in TrustedSigners(path).load()] == ["ci"]
    assert main(["cache", "trust", "rm", "nobody"]) == 2


@pytest.mark.parametrize(
    ("key", "name", "error"),
    [
        ("ssh-ed25519 AAAA!!", None, "the ssh-ed25519 key data is damaged"),
        ("hello world", None, "not an OpenSSH public key"),
        (ed25519_line(3), "alice smith", "signer name 'alice smith' may hold only"),
        (ed25519_line(3), "*", "signer name '*' may hold only"),
    ],
)
def test_bad_keys_and_names(key: str, name: str | None, error: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["cache", "trust", "add", key] + (["--name", name] if name else [])
    assert main(argv) == 2
    assert error in capsys.readouterr().err


def test_a_private_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\n")
    assert main(["cache", "trust", "add", str(key)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {key} is a private key\n")
    assert not trusted_signers_path(os.environ).exists()


def test_one_name_one_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "trust", "add", ed25519_line(4)]) == 0
    assert main(["cache", "trust", "add", ed25519_line(4)]) == 0  # the same key again: nothing changes
    assert main(["cache", "trust", "add", ed25519_line(5)]) == 2  # another key under the same name
    assert "a signer named alice@lab with another key is already trusted" in capsys.readouterr().err
    assert len(TrustedSigners(trusted_signers_path(os.environ)).load()) == 1
