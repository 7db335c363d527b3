"""`srcbuild smoke --ddp` for real: the torch 2.13.0+cpu wheel, gloo, ranks on 127.0.0.1.

One node with two processes, then two "nodes" (two launchers, node ranks 0 and 1) with two
processes each; every rank must end with rank 0's parameters after training on its own data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from srcbuild.cli import main
from srcbuild.verify.ddp import free_port

pytestmark = pytest.mark.integration
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def ddp_venv(tmp_path_factory: pytest.TempPathFactory, torch_cpu_wheel: Path) -> Path:
    """A venv with the wheel already installed, so that two nodes can share it."""
    venv = tmp_path_factory.mktemp("ddp") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(torch_cpu_wheel)]
    subprocess.run(pip, check=True)
    return venv


@pytest.fixture
def cpu_recipe(tmp_path: Path) -> Path:
    path = tmp_path / "cpu.toml"
    text = 'name = "cpu"\ndescription = "CPU test"\n[torch]\ntag = "v2.13.0"\n'
    path.write_text(text + f'[toolchain]\npython = "{PY}"\ngcc = "12"\ncuda = "none"\n')
    return path


def smoke_args(recipe: Path, wheel: Path, venv: Path, *ddp: str) -> list[str]:
    common = ["--recipe", str(recipe), "--wheel", str(wheel), "--python", sys.executable, "--venv", str(venv)]
    return ["smoke", *common, *ddp, "--json"]


def ranks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"] if c["name"].startswith("ddp-rank-")}


def test_one_node_two_processes(
    cpu_recipe: Path, torch_cpu_wheel: Path, ddp_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(smoke_args(cpu_recipe, torch_cpu_wheel, ddp_venv, "--ddp", "2")) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["ddp"]["plan"]["launcher"] == "torchrun"
    assert report["ddp"]["plan"]["backend"] == "gloo"
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["ddp-backends"]["detail"].startswith("nccl no, gloo yes, mpi no; NCCL: absent")
    got = ranks(report)
    assert sorted(got) == ["ddp-rank-0", "ddp-rank-1"]
    for n, check in enumerate(got.values()):
        assert check["status"] == "pass", check
        assert check["detail"].startswith(f"rank {n}/2 (node 0, local rank {n}) gloo on cpu: 3 steps, loss ")
        assert check["detail"].endswith("max |param - rank 0's| 0.0e+00")
    losses = {c["detail"].split("loss ")[1].split(",")[0] for c in got.values()}
    assert len(losses) == 2  # each rank trained on its own data: only the all-reduce kept them equal
    assert "torch 2.13.0: nccl no, gloo yes, mpi no" in err


def test_two_nodes_two_processes_each(
    cpu_recipe: Path, torch_cpu_wheel: Path, ddp_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = str(free_port())
    ddp = ["--ddp", "2", "--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port", port]
    node1 = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "srcbuild",
            *smoke_args(cpu_recipe, torch_cpu_wheel, ddp_venv, *ddp, "--node-rank", "1"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        code0 = main(smoke_args(cpu_recipe, torch_cpu_wheel, ddp_venv, *ddp, "--node-rank", "0"))
        out1, err1 = node1.communicate(timeout=600)
    finally:
        node1.kill()
    out0, err0 = capsys.readouterr()
    assert (code0, node1.returncode) == (0, 0), err0[-2000:] + err1[-2000:]
    node0, other = json.loads(out0), json.loads(out1)
    assert sorted(ranks(node0)) == ["ddp-rank-0", "ddp-rank-1"]
    assert sorted(ranks(other)) == ["ddp-rank-2", "ddp-rank-3"]
    for rank, check in {**ranks(node0), **ranks(other)}.items():
        n = int(rank.rsplit("-", 1)[1])
        assert check["status"] == "pass", check
        assert check["detail"].startswith(f"rank {n}/4 (node {n // 2}, local rank {n % 2}) gloo on cpu")
        assert check["detail"].endswith("max |param - rank 0's| 0.0e+00")
    expected = f"srcbuild smoke --recipe {cpu_recipe} --wheel {torch_cpu_wheel}"  # --python/--venv are this node's
    assert node0["ddp"]["plan"]["other_nodes"] == [
        f"{expected} --ddp 2 --backend gloo --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port {port}"
    ]
    assert "run on the other 1 node(s), each with the wheel:" in err0


def test_mpi_backend_on_a_wheel_without_mpi(
    cpu_recipe: Path, torch_cpu_wheel: Path, ddp_venv: Path, mpicc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(smoke_args(cpu_recipe, torch_cpu_wheel, ddp_venv, "--ddp", "2", "--backend", "mpi")) == 6
    out, err = capsys.readouterr()
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["ddp"] == {
        "name": "ddp",
        "status": "fail",
        "detail": "--backend mpi: torch.distributed.is_mpi_available() is False; "
        "NCCL: absent, as in every CPU-only wheel; DDP uses gloo (or MPI with an MPI wheel)",
        "seconds": 0.0,
    }
    assert "error: smoke test of cpu: ddp: --backend mpi: torch.distributed.is_mpi_available() is False" in err
