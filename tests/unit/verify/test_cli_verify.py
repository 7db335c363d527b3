"""`srcbuild verify`: tables, JSON, exit code 6 and the one-line error with its hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srcbuild.cli import main
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel


def kepler_wheel(tmp: Path, kernels: list[tuple[str, int]]) -> Path:
    lib = tmp / "libtorch_cuda.so"
    write_elf(lib, fatbin_container(kernels), needed=["libcudart.so.9.2"])
    return write_wheel(
        tmp,
        "torch",
        "1.7.1+cu92.sm30",
        "cp38-cp38-linux_x86_64",
        {"torch/lib/libtorch_cuda.so": lib, "torch/version.py": b"cuda = '9.2'\n"},
    )


def test_missing_arch_exits_6_with_message_and_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = kepler_wheel(tmp_path, [("sass", 35), ("sass", 37)])
    code = main(["verify", str(wheel), "--recipe", "kepler-cu92", "--no-cross-check"])
    out, err = capsys.readouterr()
    assert code == 6
    assert err.splitlines() == [
        f"error: {wheel.name}: no kernel image for compute capability 3.0: "
        "the wheel has SASS for 3.5, 3.7 and no PTX ≤ 3.0",
        "hint: rebuild with gpu.arch including 3.0",
    ]
    assert "CUDA kernels per library" in out and "torch/lib/libtorch_cuda.so" in out
    assert "3.0                 NO    no kernel image" in out.splitlines()


def test_passing_wheel_prints_verified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = kepler_wheel(tmp_path, [("sass", 30), ("ptx", 30)])
    assert main(["verify", str(wheel), "--recipe", "kepler-cu92", "--no-cross-check"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"verified: {wheel.name}"
    assert "3.0                 yes   SASS sm_30" in out.splitlines()


def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = kepler_wheel(tmp_path, [("sass", 35)])
    code = main(["verify", str(wheel), "--arch", "3.5,3.7", "--arch", "5.0", "--json", "--no-cross-check"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 6
    assert data["coverage"] == [
        {"cc": "3.5", "runs": True, "via": "SASS sm_35"},
        {"cc": "3.7", "runs": True, "via": "SASS sm_35"},
        {"cc": "5.0", "runs": False, "via": "no kernel image"},
    ]
    assert [f["rule"] for f in data["findings"]] == ["kernel-image"]
    assert err.startswith(f"error: {wheel.name}: no kernel image for compute capability 5.0")


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = kepler_wheel(tmp_path, [("sass", 35)])
    assert main(["verify", str(wheel), "--arch", "sm_35"]) == 2
    assert (
        capsys.readouterr().err.splitlines()[0]
        == "error: --arch: 'sm_35' is not a compute capability; write it as \"3.5\""
    )
    assert main(["verify", str(tmp_path / "nope.whl"), "--arch", "3.5"]) == 2
    assert "nope.whl: not a wheel file name" in capsys.readouterr().err
