"""torchvision against the recipe's torch wheel, and ``srcbuild plan --format shell`` run by hand."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from srcbuild.verify.fatbin import scan_elf
from tests.integration.execute.conftest import CP, Srcbuild

pytestmark = pytest.mark.integration


def _sms(data: bytes) -> list[tuple[str, int]]:
    return sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))})


def test_torchvision_builds_against_the_recipes_torch(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    ran = srcbuild_118.run("torchvision", "world-kepler-cu118", env_prefix=venv)
    assert ran.rc == 0, ran.out
    wheel = Path(ran.last_line)
    assert wheel.name == f"torchvision-0.20.1+cu118.sm35.sm37-{CP}-{CP}-linux_x86_64.whl"
    # torch was built first (it was not in the cache), then installed into the same environment
    # torch's own pipeline ran to its end first: its checkout-commit and canary steps make it eleven
    assert "==> [11/11] Store the wheel in the cache" in ran.out
    assert "==> [9/11] Build torch 2.5.1+cu118.sm35.sm37" in ran.out
    assert "Install torch 2.5.1+cu118.sm35.sm37 into the build environment" in ran.out
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read("torchvision-0.20.1+cu118.sm35.sm37.dist-info/METADATA").decode()
        version_py = zf.read("torchvision/version.py").decode()
        cuda = zf.read("torchvision/_cuda.so")
    assert "Requires-Dist: torch==2.5.1+cu118.sm35.sm37" in meta
    assert "torch_version = '2.5.1+cu118.sm35.sm37'" in version_py  # built against the installed torch
    assert _sms(cuda) == [("ptx", 37), ("sass", 35), ("sass", 37)]  # FORCE_CUDA=1, same arch list
    # the second time torch comes from the cache
    again = srcbuild_118.run("torchvision", "world-kepler-cu118", env_prefix=venv)
    assert again.rc == 0 and "cache hit: torchvision-0.20.1" in again.out


def test_plan_shell_script_builds_the_same_wheel_by_hand(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    plan = srcbuild_118.run("plan", "world-kepler-cu118", "torch", "--format", "shell")
    assert plan.rc == 0, plan.out
    script = tmp_path / "build.sh"
    script.write_text(plan.out)
    assert plan.out.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in plan.out
    by_hand = subprocess.run(
        ["bash", str(script)], env=srcbuild_118.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert by_hand.returncode == 0, by_hand.stdout
    dist = srcbuild_118.checkout("world-kepler-cu118") / "dist"
    (hand_wheel,) = dist.glob("torch-*.whl")
    kept = tmp_path / hand_wheel.name
    hand_wheel.rename(kept)

    ran = srcbuild_118.run("torch", "world-kepler-cu118")
    assert ran.rc == 0, ran.out
    built = Path(ran.last_line)
    assert built.name == kept.name
    with zipfile.ZipFile(kept) as a, zipfile.ZipFile(built) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())
        for lib in ("torch/lib/libtorch_cuda.so",):
            assert _sms(a.read(lib)) == _sms(b.read(lib)) == [("ptx", 37), ("sass", 35), ("sass", 37)]
        assert a.read("torch/version.py") == b.read("torch/version.py")


def test_shell_plan_gives_setup_py_the_environment_the_build_gives_it(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    import json

    record = tmp_path / "setup-env.json"
    # a fresh cache (no hit), and a stray arch list in the caller's shell that neither may pass on
    caller = {"SRCBUILD_CACHE_DIR": str(tmp_path / "cache"), "FAKE_TORCH_RECORD_ENV": str(record)}
    caller["TORCH_CUDA_ARCH_LIST"] = caller["BUILD_VERSION"] = "9.9"
    plan = srcbuild_118.run("plan", "world-kepler-cu118", "torch", "--format", "shell", env=caller)
    assert plan.rc == 0, plan.out
    script = tmp_path / "build.sh"
    script.write_text(plan.out)
    by_hand = subprocess.run(
        ["bash", str(script)], env={**srcbuild_118.env, **caller}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert by_hand.returncode == 0, by_hand.stdout
    hand = json.loads(record.read_text())
    record.unlink()
    ran = srcbuild_118.run("torch", "world-kepler-cu118", env=caller)
    assert ran.rc == 0, ran.out
    built = json.loads(record.read_text())
    shell_own = {"PWD", "OLDPWD", "SHLVL", "_"}  # what bash itself sets
    hand_env = {k: v for k, v in hand["environ"].items() if k not in shell_own}
    built_env = {k: v for k, v in built["environ"].items() if k not in shell_own}
    assert hand["cwd"] == built["cwd"]
    assert hand_env == built_env
    assert built_env["TORCH_CUDA_ARCH_LIST"] == "3.5;3.7+PTX" and "BUILD_VERSION" not in built_env
    assert built_env["CUDA_HOME"] == srcbuild_118.env["CUDA_HOME"]
