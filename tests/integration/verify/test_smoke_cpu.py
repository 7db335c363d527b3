"""`srcbuild smoke` without a GPU, for real: the torch 2.13.0+cpu wheel in one venv per session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from srcbuild.cli import main

pytestmark = pytest.mark.integration
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="session")
def smoke_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("smoke") / "venv"


def cpu_recipe(tmp: Path, mpi: bool) -> Path:
    name = "cpu-mpi" if mpi else "cpu"
    text = f'name = "{name}"\ndescription = "CPU test"\n[torch]\ntag = "v2.13.0"\n'
    text += f'[toolchain]\npython = "{PY}"\ngcc = "12"\ncuda = "none"\n'
    if mpi:
        text += '[mpi]\nenabled = true\nimplementation = "openmpi"\nversion = "4.1"\n'
    path = tmp / f"{name}.toml"
    path.write_text(text)
    return path


def smoke(recipe: Path, wheel: Path, venv: Path, *extra: str) -> int:
    return main(
        [
            "smoke",
            "--recipe",
            str(recipe),
            "--wheel",
            str(wheel),
            "--python",
            sys.executable,
            "--venv",
            str(venv),
            *extra,
        ]
    )


def test_cpu_wheel_without_gpu_runs_cpu_parts(
    tmp_path: Path, torch_cpu_wheel: Path, smoke_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert smoke(cpu_recipe(tmp_path, mpi=False), torch_cpu_wheel, smoke_venv) == 0
    out = capsys.readouterr().out
    assert "smoke test of cpu (no GPU)" in out
    rows = [line.strip().split(maxsplit=2) for line in out.splitlines()]  # the table: check, result, detail
    assert ["import", "pass", "torch 2.13.0+cpu, CUDA None"] in rows
    assert ["kernel-launch", "skipped", "no GPU: torch.cuda.is_available() is False"] in rows
    assert out.splitlines()[-1] == "smoke test passed (CPU and MPI parts only: no GPU here)"


def test_mpi_recipe_fails_on_a_wheel_without_mpi(
    tmp_path: Path, torch_cpu_wheel: Path, smoke_venv: Path, mpicc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert smoke(cpu_recipe(tmp_path, mpi=True), torch_cpu_wheel, smoke_venv, "--json") == 6
    out, err = capsys.readouterr()
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["matmul-cpu"]["status"] == "pass"
    assert checks["mpi-available"] == {
        "name": "mpi-available",
        "status": "fail",
        "detail": "torch.distributed.is_mpi_available() is False",
        "seconds": 0.0,
    }
    assert checks["mpi-allreduce"]["detail"].startswith("RuntimeError: Distributed package doesn't have MPI built in")
    assert "error: smoke test of cpu-mpi: mpi-available: torch.distributed.is_mpi_available() is False" in err


def test_env_checks_the_installed_torch_and_changes_nothing(
    tmp_path: Path, torch_cpu_wheel: Path, smoke_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = cpu_recipe(tmp_path, mpi=False)
    if not (smoke_venv / "bin" / "python").exists():  # the venv the first test made, when run alone
        assert smoke(recipe, torch_cpu_wheel, smoke_venv) == 0
        capsys.readouterr()
    listing = sorted(str(p.relative_to(smoke_venv)) for p in smoke_venv.rglob("*") if "__pycache__" not in p.parts)
    assert main(["smoke", "--recipe", str(recipe), "--env", str(smoke_venv), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["import"]["detail"] == "torch 2.13.0+cpu, CUDA None"
    assert checks["matmul-cpu"]["status"] == "pass"
    assert "torchvision-nms-cpu" not in checks  # torchvision is not installed there
    after = sorted(str(p.relative_to(smoke_venv)) for p in smoke_venv.rglob("*") if "__pycache__" not in p.parts)
    assert after == listing  # nothing installed, nothing removed


def test_env_refuses_install_options_and_a_missing_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = cpu_recipe(tmp_path, mpi=False)
    wheel = tmp_path / "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"")
    (tmp_path / "env" / "bin").mkdir(parents=True)
    (tmp_path / "env" / "bin" / "python").write_text("")
    assert main(["smoke", "--recipe", str(recipe), "--env", str(tmp_path / "env"), "--wheel", str(wheel)]) == 2
    err = capsys.readouterr().err
    assert "--wheel cannot be given with it" in err
    assert main(["smoke", "--recipe", str(recipe), "--env", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "bin/python does not exist (not a venv or conda prefix)" in err
