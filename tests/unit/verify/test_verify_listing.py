"""``srcbuild verify WHEEL`` with no target lists kernels and GPUs; a CPU wheel says it has no CUDA;
a failure with ``--json`` has the common shape; manylinux2014 wheels get their platform tag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srcbuild.cli import main
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel


def cuda_wheel(tmp_path: Path, tag: str = "cp38-cp38-linux_x86_64") -> Path:
    lib, cpu = tmp_path / "libk.so", tmp_path / "libc10.so"
    write_elf(lib, fatbin_container([("sass", 35), ("sass", 37), ("ptx", 37)]), needed=["libc10.so"])
    write_elf(cpu, b"", needed=["libc.so.6"])
    return write_wheel(tmp_path, "torch", "1.7.1", tag, {"torch/lib/libk.so": lib, "torch/lib/libc10.so": cpu})


def cpu_wheel(tmp_path: Path) -> Path:
    cpu = tmp_path / "libc10.so"
    write_elf(cpu, b"", needed=["libc.so.6"])
    return write_wheel(tmp_path, "torch", "2.1.0", "cp38-cp38-linux_x86_64", {"torch/lib/libc10.so": cpu})


def words(text: str) -> str:
    return " ".join(text.split())


def test_no_target_lists_each_library_and_the_gpus_it_runs_on(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wheel = cuda_wheel(tmp_path)
    assert main(["verify", str(wheel), "--no-cross-check"]) == 0
    out = capsys.readouterr().out
    assert "torch/lib/libk.so" in out and "runs on" in out
    assert "the wheel runs on: Kepler 3.5 3.7, Maxwell, Pascal, Volta, Turing, Ampere, Ada, Hopper" in words(out)
    assert all(len(line) <= 80 for line in out.splitlines())
    assert main(["verify", str(wheel), "--no-cross-check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["has_cuda"] and "3.0" not in data["runs_on"] and "3.5" in data["runs_on"]
    assert data["libraries"][0]["runs_on"][:2] == ["3.5", "3.7"]


def test_a_wheel_without_cuda_says_exactly_that(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wheel = cpu_wheel(tmp_path)
    assert main(["verify", str(wheel)]) == 0
    out = capsys.readouterr().out
    assert "this wheel has no CUDA: its one shared library holds no CUDA kernel" in out
    assert "cuobjdump" not in out
    assert main(["verify", str(wheel), "--arch", "3.5"]) == 6
    err = words(capsys.readouterr().err)
    assert f"error: {wheel.name}: this wheel has no CUDA: its one shared library holds no CUDA kernel" in err
    assert "rebuild with gpu.arch" not in err


def test_a_json_failure_has_error_hint_and_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wheel = cuda_wheel(tmp_path)
    assert main(["verify", str(wheel), "--arch", "3.0", "--no-cross-check", "--json"]) == 6
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["exit_code"] == 6
    assert data["error"].startswith(f"{wheel.name}: no kernel image for compute capability 3.0")
    assert data["hint"] == "rebuild with gpu.arch including 3.0"


def test_a_manylinux2014_wheel_gets_its_platform_tag(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wheel = cuda_wheel(tmp_path, "cp38-cp38-manylinux2014_x86_64")
    assert main(["verify", str(wheel), "--arch", "3.5", "--no-cross-check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["manylinux"] == "manylinux_2_5_x86_64"


def test_no_finding_cites_a_file_the_repository_lacks(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wheel = cuda_wheel(tmp_path)
    main(["verify", str(wheel), "--arch", "6.0", "--arch", "3.0", "--no-cross-check", "--json"])
    sources = " ".join(f["source"] for f in json.loads(capsys.readouterr().out)["findings"])
    assert sources and ".md" not in sources
