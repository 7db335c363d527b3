"""The requirement line a hit hands pip (``hashed_requirement``): pip in hash-checking mode installs
the wheel it names, records the manifest's digest as the file's hash (the one it checked, not a
second pass of its own), and refuses the file once its bytes differ from the manifest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from srcbuild.cache.install import hashed_requirement, pip_install_argv
from tests.unit.cache.synthetic import host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration


def _pip(venv: Path, line: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    req = tmp_path / "req.txt"
    req.write_text(line)
    return subprocess.run(pip_install_argv(venv / "bin" / "python", req), capture_output=True, text=True)


def test_the_line_pins_the_wheel_to_the_manifest_digest_in_the_url_and_as_hash(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag())
    manifest = make_manifest(wheel, platform=None)
    line = hashed_requirement(manifest, wheel)
    digest = manifest.sha256
    assert line == f"torch @ {wheel.resolve().as_uri()}#sha256={digest} --hash=sha256:{digest}\n"


def test_pip_records_the_checked_digest(fresh_venv: Path, tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag())
    manifest = make_manifest(wheel, platform=None)
    done = _pip(fresh_venv, hashed_requirement(manifest, wheel), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    record = next(fresh_venv.glob("lib/python3*/site-packages/torch-1.7.1+cu92.sm30.dist-info/direct_url.json"))
    assert json.loads(record.read_text())["archive_info"]["hashes"] == {"sha256": manifest.sha256}


def test_a_wheel_changed_after_its_manifest_is_refused(fresh_venv: Path, tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag())
    manifest = make_manifest(wheel, platform=None)
    data = bytearray(wheel.read_bytes())
    data[len(data) // 2] ^= 0xFF
    wheel.write_bytes(bytes(data))
    done = _pip(fresh_venv, hashed_requirement(manifest, wheel), tmp_path)
    assert done.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in done.stderr
    assert not list(fresh_venv.glob("lib/python3*/site-packages/torch*"))
