"""The canary of a torch build on the fixture world: a real CMake configure of the fake torch (it
prints torch's summary lines and caches what torch's configure caches), read back against the plan,
its FillKernel-named CUDA object built through its own ninja target and read for every arch."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.integration.execute.conftest import CP, Srcbuild
from tests.integration.execute.world import RECIPES

FILL = "caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/FillKernel.cu.o"


def _state(sb: Srcbuild, recipe: str) -> dict:
    return json.loads((sb.work_dir / "builds" / f"{recipe}-torch" / "state.json").read_text())


def test_canary_stops_after_it_and_resume_builds_in_the_same_tree(srcbuild_118: Srcbuild) -> None:
    done = subprocess.run(
        srcbuild_118.args("torch", "world-kepler-cu118", "--canary", "--json"),
        env=srcbuild_118.env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["wheel"] is None and [s["id"] for s in result["steps"]][-1] == "canary"
    canary = result["canary"]
    readout = {r["key"]: r for r in canary["readout"]}
    assert readout["cuda-version"]["cmake"] == "11.8" and readout["cuda-version"]["where"] == "summary:CUDA version"
    assert readout["archs"]["cmake"] == "sm_35 sm_37 compute_37" and all(r["ok"] for r in canary["readout"])
    assert readout["cuda-home"]["where"] == "cache:CUDA_TOOLKIT_ROOT_DIR"
    [unit] = canary["units"]
    assert unit["target"] == FILL and unit["sass"] == [35, 37] and unit["ptx"] == [37]
    assert canary["wall"] > 0 and canary["cpu"] > 0
    assert re.search(r"canary passed in \d+ s wall, \d+ s CPU", done.stderr)
    state = _state(srcbuild_118, "world-kepler-cu118")
    assert state["steps"]["canary"]["status"] == "done" and state["steps"]["canary"]["record"]["kind"] == "canary"
    assert state["steps"].get("build", {}).get("status", "pending") == "pending"

    resumed = srcbuild_118.run("torch", "world-kepler-cu118", "--resume")
    assert resumed.rc == 0, resumed.out
    assert "Canary: configure for real and compile a few units per arch: done in an earlier run" in resumed.out
    assert Path(resumed.last_line).name == f"torch-2.5.1+cu118.sm35.sm37-{CP}-{CP}-linux_x86_64.whl"
    build = srcbuild_118.build_log("world-kepler-cu118").read_text()
    assert "Everything's in place. Do not rerun." in build  # the canary's configure, reused
    assert "Building CUDA kernels" not in build  # the canary's object, reused by ninja


def test_no_canary_is_shown_and_recorded(srcbuild_118: Srcbuild) -> None:
    plan = srcbuild_118.run("plan", "world-kepler-cu118", "torch")
    assert "[canary] Canary: configure for real" in plan.out
    ran = srcbuild_118.run("torch", "world-kepler-cu118", "--no-canary")
    assert ran.rc == 0, ran.out
    assert "canary skipped: --no-canary" in ran.out
    record = _state(srcbuild_118, "world-kepler-cu118")["steps"]["canary"]["record"]
    assert record["kind"] == "canary" and record["skipped"] == "--no-canary"


def test_an_mpi_cmake_cannot_find_is_caught_in_one_line(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    """CMake's MPI search turned off stands for a machine whose MPI CMake cannot find: torch's
    configure warns and goes on with USE_MPI OFF, exit 0; the canary stops it."""
    text = (RECIPES / "world-kepler-cu118-mpi.toml").read_text()
    blind = tmp_path / "world-kepler-cu118-mpi.toml"
    blind_env = 'env = { USE_MAGMA = "0", CMAKE_DISABLE_FIND_PACKAGE_MPI = "TRUE" }'
    blind.write_text(text.replace('env = { USE_MAGMA = "0" }', blind_env + "\nallow_env_override = true"))
    argv = srcbuild_118.args("torch", "world-kepler-cu118-mpi", "--canary")
    argv[argv.index("--recipe") + 1] = str(blind)
    done = subprocess.run(argv, env=srcbuild_118.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300)
    assert done.returncode == 5, done.stdout
    assert "Not compiling with MPI" in srcbuild_118.configure_log("world-kepler-cu118-mpi").read_text()
    assert "error: canary: USE_MPI: the plan has ON, CMake has OFF (OFF) (summary:USE_MPI); configure log: " in (
        done.stdout
    )
    assert done.stdout.rstrip().endswith("--canary --resume")  # the hint: this command, continued


def test_an_arch_the_cuda_cannot_target_fails_at_the_canary(srcbuild_118: Srcbuild) -> None:
    """3.0 with CUDA 11.8, forced past the rules: the configure accepts it; the canary's first
    CUDA unit fails, diagnosed like a build failure, before the long build."""
    ran = srcbuild_118.run("torch", "world-kepler-sm30", "--ignore-preflight", "--canary")
    assert ran.rc == 5, ran.out
    assert "ok       CUDA archs: sm_30" in ran.out  # CMake took it without a word
    assert "Unsupported gpu architecture 'compute_30'" in ran.out
    assert "error: step canary failed (ninja exited 1)" in ran.out
    state = _state(srcbuild_118, "world-kepler-sm30")
    assert state["steps"]["canary"]["status"] == "failed"
    assert state["steps"].get("build", {}).get("status", "pending") == "pending"
