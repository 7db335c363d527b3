"""The target's pip started early (``pip_target``) installs exactly what ``python -m pip`` installs,
refuses a changed wheel the same way, says the same when the interpreter has no pip, and a cancelled
one leaves the environment untouched."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from srcbuild.cache.pip_target import run_pip, start_pip
from tests.unit.cache.synthetic import host_tag, make_wheel

pytestmark = pytest.mark.integration


def _requirements(tmp_path: Path, wheel: Path, sha256: str) -> Path:
    req = tmp_path / "req.txt"
    req.write_text(f"torch @ {wheel.resolve().as_uri()} --hash=sha256:{sha256}\n")
    return req


def _argv(venv: Path, req: Path) -> list[str]:
    python = str(venv / "bin" / "python")
    return [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--require-hashes", "-r",
            str(req)]  # fmt: skip


def _installed(venv: Path) -> list[str]:
    site = next((venv / "lib").glob("python3*/site-packages"))
    return sorted(p.name for p in site.iterdir() if p.name.startswith("torch"))


def test_the_early_pip_installs_what_python_m_pip_installs(
    fresh_venv: Path, venv_template: Path, tmp_path: Path
) -> None:
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag())
    req = _requirements(tmp_path, wheel, hashlib.sha256(wheel.read_bytes()).hexdigest())
    waiting = start_pip(fresh_venv / "bin" / "python")
    assert waiting is not None
    result = run_pip(waiting, _argv(fresh_venv, req))
    assert result.ok, result.tail
    assert result.tail[-1] == "Successfully installed torch-1.7.1+cu92.sm30"

    plain = tmp_path / "plain"
    subprocess.run(["cp", "-a", str(venv_template), str(plain)], check=True)
    done = subprocess.run(_argv(plain, req), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _installed(fresh_venv) == _installed(plain) == ["torch", "torch-1.7.1+cu92.sm30.dist-info"]
    record = "torch-1.7.1+cu92.sm30.dist-info"
    for name in ("INSTALLER", "METADATA", "WHEEL"):  # the same files, byte for byte
        ours = next(fresh_venv.glob(f"lib/python3*/site-packages/{record}/{name}")).read_bytes()
        theirs = next(plain.glob(f"lib/python3*/site-packages/{record}/{name}")).read_bytes()
        assert ours == theirs


def test_a_changed_wheel_is_refused_by_the_early_pip_as_by_pip(fresh_venv: Path, tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag())
    req = _requirements(tmp_path, wheel, "0" * 64)
    waiting = start_pip(fresh_venv / "bin" / "python")
    assert waiting is not None
    result = run_pip(waiting, _argv(fresh_venv, req))
    assert result.returncode != 0
    assert any("THESE PACKAGES DO NOT MATCH THE HASHES" in line for line in result.tail)
    assert _installed(fresh_venv) == []


def test_a_cancelled_early_pip_installs_nothing(fresh_venv: Path) -> None:
    waiting = start_pip(fresh_venv / "bin" / "python")
    assert waiting is not None
    waiting.cancel()
    assert _installed(fresh_venv) == []


def test_without_pip_the_message_is_pythons_own(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    plain = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True)
    waiting = start_pip(python)
    assert waiting is not None
    result = run_pip(waiting, [str(python), "-m", "pip", "--version"])
    assert result.returncode == plain.returncode == 1
    assert result.tail[-1] == plain.stderr.strip().splitlines()[-1]  # "<python>: No module named pip"


def test_no_process_for_a_missing_interpreter(tmp_path: Path) -> None:
    assert start_pip(tmp_path / "nope" / "bin" / "python") is None
