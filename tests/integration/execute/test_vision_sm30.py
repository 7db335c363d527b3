"""torchvision for compute capability 3.0: torch's cpp_extension refuses the arch until the plan's
``torch-arches`` step adds it to ``supported_arches``.

No CUDA toolkit here compiles sm_30 (CUDA 11.8 starts at 3.5, 13.0 at 7.5), so neither a torch
wheel with sm_30 kernels nor torchvision's sm_30 kernels can be built on this machine. The test
therefore builds the fake torch CPU-only, standing in for a torch wheel built for 3.0 with CUDA 10.2
on another machine, and hands it to the torchvision plan as the recipe's torch wheel. The fake
torchvision's setup.py checks TORCH_CUDA_ARCH_LIST=3.0 against the installed torch's
``supported_arches`` the way torch's ``_get_cuda_arch_flags`` does (the check that stops real
torchvision builds), and builds no CUDA code against a CPU-only torch, so no nvcc runs for 3.0.
The real executor runs the real plan up to its build step (preflight errors reported, not fatal:
CUDA 11.8 cannot compile 3.0); the verify step would rightly refuse a wheel with no sm_30 kernels.
"""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from srcbuild.errors import StepFailed
from srcbuild.execute.context import BuildContext
from srcbuild.execute.executor import Executor, environ_for_build
from srcbuild.execute.records import TorchBuilt
from srcbuild.files import sha256_file
from srcbuild.paths import Paths
from srcbuild.pipeline import prepare
from srcbuild.plan import Plan
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve import BuildOptions, ResolvedBuild
from tests.integration.execute.conftest import Srcbuild, recipe
from tests.integration.execute.world import WORLDS

pytestmark = pytest.mark.integration

VERSION = "2.5.1+cu118.sm30"


def _cpu_torch_wheel(tmp_path: Path, env: dict[str, str]) -> Path:
    """The fake torch built with USE_CUDA=0 under the recipe's wheel version."""
    src = tmp_path / "fake_torch"
    shutil.copytree(WORLDS / "fake_torch", src, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    build_env = {**env, "USE_CUDA": "0", "PYTORCH_BUILD_VERSION": VERSION, "PYTORCH_BUILD_NUMBER": "1"}
    done = subprocess.run(
        [sys.executable, "setup.py", "bdist_wheel"], cwd=src, env=build_env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (src / "dist").glob("torch-*.whl")
    return wheel


def _run_until_build(sb: Srcbuild, plan: Plan, wheel: Path, resolved: ResolvedBuild) -> str:
    """Run ``plan`` (cut after its build step) with the real executor; the console's text."""
    steps = plan.steps[: plan.step_ids.index("build") + 1]
    out = io.StringIO()
    executor = Executor(
        dataclasses.replace(plan, steps=steps),
        console=Console(file=out, width=200, highlight=False, soft_wrap=True),
        environ=environ_for_build(sb.env),
        context=BuildContext(resolved=resolved),
    )
    # what srcbuild.pipeline does after torch's own pipeline (the wheel's sha256 as its entry records it)
    executor.records.add(TorchBuilt(wheel, sha256_file(wheel), "stand-in"))
    try:
        executor.run()
    except StepFailed as exc:
        return out.getvalue() + f"\nstopped: {exc.message}\n"
    return out.getvalue()


def test_torchvision_for_30_fails_without_the_step_and_builds_with_it(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    sb = srcbuild_118
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wheel = _cpu_torch_wheel(tmp_path, sb.env)
    assert wheel.name.startswith(f"torch-{VERSION}-")
    paths = Paths.resolve(work_dir=sb.work_dir, cache_dir=sb.cache_dir, environ=sb.env)
    loaded = RecipeCatalog(paths).load(recipe("world-kepler-sm30"))
    options = BuildOptions(
        package="torchvision", mirrors=(sb.world.mirror_rule,), env_prefix=str(venv), ignore_preflight=True
    )
    prepared = prepare(loaded, options, paths, sb.env)
    plan = prepared.plan
    assert plan.step_ids.index("torch-arches") == plan.step_ids.index("install-torch") + 1
    assert plan.env.final_values()["TORCH_CUDA_ARCH_LIST"] == "3.0"

    # without the step: torch's check stops torchvision's build, as it does upstream
    without = dataclasses.replace(plan, steps=tuple(s for s in plan.steps if s.id != "torch-arches"))
    failed = _run_until_build(sb, without, wheel, prepared.resolved)
    assert "ValueError: Unknown CUDA arch (3.0) or GPU not supported" in failed
    assert "stopped: step build failed (" in failed

    # with it: the installed torch lists 3.0 and the build goes through
    built = _run_until_build(sb, plan, wheel, prepared.resolved)
    assert "stopped:" not in built, built
    cpp_extension = next(venv.glob("lib/python*/site-packages/torch/utils/cpp_extension.py"))
    assert (
        f"{cpp_extension}: added 3.0 to supported_arches"
        in (sb.work_dir / "builds")
        .joinpath(
            "world-kepler-sm30-torchvision", "logs", f"{plan.step_ids.index('torch-arches') + 1:02d}-torch-arches.log"
        )
        .read_text()
    )
    assert "supported_arches = ['3.0', '3.5'," in cpp_extension.read_text()
    log = (sb.work_dir / "builds" / "world-kepler-sm30-torchvision" / "logs").glob("*-build.log")
    assert "arch flags from torch: -gencode=arch=compute_30,code=sm_30" in next(log).read_text()
    dist = sb.checkout("world-kepler-sm30", "torchvision") / "dist"
    assert [p.name for p in dist.glob("*.whl")] == [
        f"torchvision-0.20.1+cu118.sm30-cp{sys.version_info[0]}{sys.version_info[1]}-"
        f"cp{sys.version_info[0]}{sys.version_info[1]}-linux_x86_64.whl"
    ]

    # the step is idempotent: run again, it changes nothing
    (cmd,) = plan.step("torch-arches").commands
    again = subprocess.run(cmd.argv, capture_output=True, text=True, env=dict(os.environ))
    assert again.stdout.strip() == f"{cpp_extension}: supported_arches already lists 3.0"
    assert cpp_extension.read_text().count("supported_arches = ['3.0', '3.5',") == 1
