"""The DDP part of smoke is decided before it runs: launcher, backend, this node's command, the others'."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.errors import UsageError
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.verify.ddp import (
    STEP_SCRIPT,
    DdpRequest,
    WheelBackends,
    choose_backend,
    launcher_for,
    nccl_note,
    other_node_commands,
    plan_ddp,
)

CPU = WheelBackends("2.13.0", True, nccl=False, gloo=True, mpi=False, gpus=0)
SM30_MPI = WheelBackends("1.7.1", True, nccl=False, gloo=True, mpi=True, gpus=1)
CUDA_2GPU = WheelBackends("2.5.1", True, nccl=True, gloo=True, mpi=False, gpus=2)


def recipe(name: str) -> Recipe:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load(name)


@pytest.mark.parametrize(
    ("version", "launcher"),
    [
        ("1.7.1", "torch.distributed.launch"),
        ("1.9.1", "torch.distributed.launch"),
        ("1.10.0", "torchrun"),
        ("1.10.2+cu102", "torchrun"),
        ("2.13.0", "torchrun"),
        ("1.10.0a0+git1234", "torchrun"),
    ],
)
def test_launcher_follows_the_torch_version(version: str, launcher: str) -> None:
    assert launcher_for(version) == launcher


def test_auto_backend() -> None:
    assert choose_backend(DdpRequest(2), CUDA_2GPU)[0] == "nccl"
    assert choose_backend(DdpRequest(4), CUDA_2GPU) == ("gloo", "4 ranks but 2 GPUs here: gloo on the CPU")
    assert choose_backend(DdpRequest(2), CPU) == ("gloo", "gloo on the CPU (the wheel has no NCCL)")
    only_mpi = WheelBackends("1.7.1", True, nccl=False, gloo=False, mpi=True, gpus=0)
    assert choose_backend(DdpRequest(2), only_mpi)[0] == "mpi"


def test_asked_backend_the_wheel_lacks() -> None:
    assert choose_backend(DdpRequest(2, "mpi"), CPU) == (
        None,
        "--backend mpi: torch.distributed.is_mpi_available() is False",
    )
    assert choose_backend(DdpRequest(2, "nccl"), CPU)[0] is None
    assert choose_backend(DdpRequest(3, "nccl"), CUDA_2GPU) == (
        None,
        "--backend nccl needs a GPU per rank: 3 ranks, 2 GPUs here",
    )
    no_dist = WheelBackends("1.7.1", False, False, False, False, 0)
    assert choose_backend(DdpRequest(2), no_dist)[1].endswith(
        "torch.distributed.is_available() is False (built without it)"
    )


def test_sm30_recipes_explain_the_missing_nccl() -> None:
    note = nccl_note(recipe("kepler-cu102"), SM30_MPI)
    assert note == (
        "NCCL: absent: recipe kepler-cu102 builds with USE_NCCL=0 (the bundled NCCL uses __funnelshift_r, "
        "which compute capability 3.0 lacks), so DDP with this wheel is limited to gloo, or MPI with an MPI recipe"
    )
    assert nccl_note(recipe("kepler-k80-cu118"), CUDA_2GPU) is None


def test_single_node_torchrun_command(tmp_path: Path) -> None:
    request = DdpRequest(2, master_port=29511)
    plan, why = plan_ddp(recipe("kepler-k80-cu118"), request, CPU, tmp_path / "v")
    assert plan is not None and why == "gloo on the CPU (the wheel has no NCCL)"
    assert plan.launcher == "torchrun" and plan.backend == "gloo" and plan.other_nodes == ()
    assert plan.command.argv == (
        str(tmp_path / "v/bin/torchrun"),
        "--nproc_per_node",
        "2",
        "--nnodes",
        "1",
        "--node_rank",
        "0",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        "29511",
        str(STEP_SCRIPT),
        "step",
        "gloo",
        "3",
        "0",
    )
    assert plan.command.env.final_values() == {"OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}


def test_old_torch_uses_the_launch_module_and_prints_the_other_nodes(tmp_path: Path) -> None:
    args = ("--recipe", "kepler-cu92", "--wheel", "/w/torch.whl")
    request = DdpRequest(2, "gloo", nnodes=3, node_rank=0, master_addr="10.0.0.5", master_port=29500, smoke_args=args)
    plan, _ = plan_ddp(recipe("kepler-cu92"), request, SM30_MPI, tmp_path / "v")
    assert plan is not None
    assert plan.command.argv[:3] == (str(tmp_path / "v/bin/python"), "-m", "torch.distributed.launch")
    assert plan.command.argv[-5:] == (str(STEP_SCRIPT), "step", "gloo", "3", "0")
    assert "GLOO_SOCKET_IFNAME" not in plan.command.env.final_values()
    assert plan.other_nodes == (
        "srcbuild smoke --recipe kepler-cu92 --wheel /w/torch.whl --ddp 2 --backend gloo --nnodes 3 "
        "--node-rank 1 --master-addr 10.0.0.5 --master-port 29500",
        "srcbuild smoke --recipe kepler-cu92 --wheel /w/torch.whl --ddp 2 --backend gloo --nnodes 3 "
        "--node-rank 2 --master-addr 10.0.0.5 --master-port 29500",
    )


def test_other_nodes_skip_this_one() -> None:
    request = DdpRequest(4, nnodes=2, node_rank=1, master_addr="node0", smoke_args=("--recipe", "pascal-cu126"))
    assert other_node_commands(request, "nccl") == (
        "srcbuild smoke --recipe pascal-cu126 --ddp 4 --backend nccl --nnodes 2 --node-rank 0 "
        "--master-addr node0 --master-port 29500",
    )


def test_mpi_backend_goes_through_mpirun_as_root(tmp_path: Path) -> None:
    request = DdpRequest(2, "mpi")
    plan, _ = plan_ddp(recipe("kepler-cu92-mpi"), request, SM30_MPI, tmp_path / "v", "/usr/bin/mpirun", True, True)
    assert plan is not None and plan.launcher == "mpirun"
    assert plan.command.argv == (
        "/usr/bin/mpirun",
        "-np",
        "2",
        "--oversubscribe",
        str(tmp_path / "v/bin/python"),
        str(STEP_SCRIPT),
        "step",
        "mpi",
        "3",
        "0",
    )
    assert plan.command.env.final_values()["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    missing, why = plan_ddp(recipe("kepler-cu92-mpi"), request, SM30_MPI, tmp_path / "v", None)
    assert missing is None and why == "--backend mpi: mpirun is not on PATH (apt-get install openmpi-bin)"


def test_request_errors() -> None:
    with pytest.raises(UsageError, match=r"--node-rank 2: must be between 0 and 1 \(--nnodes 2\)"):
        DdpRequest(2, nnodes=2, node_rank=2).check()
    with pytest.raises(UsageError, match="mpirun starts the ranks on every node itself"):
        DdpRequest(2, "mpi", nnodes=2).check()
    with pytest.raises(UsageError, match="needs at least one process"):
        DdpRequest(0).check()


def test_parse_probe_line() -> None:
    lines = [
        "noise",
        'DDP {"torch": "2.13.0", "distributed": true, "nccl": false, "gloo": true, "mpi": false, "gpus": 0}',
    ]
    assert WheelBackends.parse(lines) == CPU
    assert CPU.summary() == "nccl no, gloo yes, mpi no"
    assert WheelBackends.parse(["Traceback"]) is None


def test_cli_needs_master_addr_for_several_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["smoke", "--recipe", "kepler-cu102", "--wheel", __file__, "--ddp", "2", "--nnodes", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "error: smoke --nnodes 2: every node must be told where node 0 is" in err
    assert "hint: add --master-addr ADDRESS_OF_NODE_0 --node-rank 0" in err


def test_cli_ddp_options_need_ddp(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["smoke", "--recipe", "kepler-cu102", "--wheel", __file__, "--nnodes", "2"]) == 2
    assert "error: smoke: the DDP options need --ddp N" in capsys.readouterr().err
