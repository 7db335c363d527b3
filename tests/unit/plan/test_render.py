"""Rendering a plan as text, JSON and a standalone bash script."""

from __future__ import annotations

import json

from srcbuild.paths import Paths
from srcbuild.plan import render
from srcbuild.resolve import BuildHost, BuildOptions
from tests.unit.plan.conftest import load, plan_for


def test_text_shows_settings_variables_and_steps(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    text = render(plan_for(load(paths, "world-kepler-cu118"), options, host, paths, {}), "text")
    assert text.startswith("Plan: torch 2.5.1+cu118.sm35.sm37 for recipe world-kepler-cu118\n\nSettings:\n")
    assert "  TORCH_CUDA_ARCH_LIST=3.5;3.7+PTX    # gpu.arch (+PTX when gpu.ptx)\n" in text
    assert " 8. [canary] Canary: configure for real and compile a few units per arch\n" in text
    assert " 9. [build] Build torch 2.5.1+cu118.sm35.sm37\n" in text
    assert "    $ /envs/py311/bin/python setup.py bdist_wheel\n" in text
    assert "      env: the build variables above\n" in text
    assert "    on failure (unless --keep-build):\n      $ /envs/py311/bin/python setup.py clean\n" in text


def test_json_is_the_plan(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(load(paths, "world-kepler-cu118"), options, host, paths, {})
    data = json.loads(render(plan, "json"))
    assert [s["id"] for s in data["steps"]] == list(plan.step_ids)
    build = data["steps"][plan.step_ids.index("build")]
    assert build["commands"][0]["argv"] == ["/envs/py311/bin/python", "setup.py", "bdist_wheel"]
    assert {"op": "set", "name": "USE_CUDA", "value": "1", "origin": "toolchain.cuda"} in build["commands"][0]["env"]
    assert data["cmake_settings_hash"] == plan.cmake_settings_hash


def test_shell_script(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(load(paths, "world-kepler-cu118"), options, host, paths, {})
    script = render(plan, "shell")
    lines = script.splitlines()
    assert lines[:4] == [
        "#!/usr/bin/env bash",
        "# srcbuild plan: torch 2.5.1+cu118.sm35.sm37 for recipe world-kepler-cu118.",
        "# The same commands `srcbuild torch --recipe world-kepler-cu118` runs, for running by hand.",
        "set -euo pipefail",
    ]
    assert "  export TORCH_CUDA_ARCH_LIST='3.5;3.7+PTX'" in lines
    assert "  export PYTORCH_BUILD_VERSION=2.5.1+cu118.sm35.sm37" in lines
    assert "if ! (" in lines  # the build command, with its cleanup on failure
    assert "# srcbuild does this itself: check recipe world-kepler-cu118 and this host for a torch build" in lines
    checkout = plan.checkout
    digest = plan.cmake_settings_hash
    assert any(line.startswith(f"if [ -f {checkout}/build/CMakeCache.txt ]") and digest in line for line in lines)
    assert (
        "if [ ! -x /envs/py311/bin/python ]; then echo 'this build uses the existing environment /envs/py311 "
        "(--env), which has no bin/python' >&2; exit 1; fi" in lines
    )


def test_system_alternatives_script_restores(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    import dataclasses

    plan = plan_for(
        load(paths, "world-kepler-cu118"), dataclasses.replace(options, system_alternatives=True), host, paths, {}
    )
    script = render(plan, "shell")
    assert "trap srcbuild_restore_gcc EXIT" in script
    assert "update-alternatives --log" in script
