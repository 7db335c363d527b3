"""The torch-arches step: torchvision builds for compute capability 3.0 patch torch's supported_arches."""

from __future__ import annotations

import dataclasses
import json

from srcbuild.paths import Paths
from srcbuild.plan.render import render
from srcbuild.resolve import BuildHost, BuildOptions
from tests.unit.plan.conftest import load, plan_for


def test_a_30_torchvision_plan_patches_supported_arches_after_installing_torch(
    paths: Paths, host: BuildHost, options: BuildOptions
) -> None:
    vision = dataclasses.replace(options, package="torchvision")
    plan = plan_for(load(paths, "world-kepler-sm30"), vision, host, paths, {})
    ids = plan.step_ids
    assert ids.index("torch-arches") == ids.index("install-torch") + 1 < ids.index("build")
    step = plan.step("torch-arches")
    assert step.title == "Let the installed torch build extensions for compute capability 3.0"
    assert "'ValueError: Unknown CUDA arch (3.0) or GPU not supported'" in step.why
    assert step.why.endswith("Source: dizcza/pytorch-sm30-docker: Dockerfile; pytorch/vision#1841; compat.md §4.4")
    (cmd,) = step.commands
    assert cmd.argv[0] == "/envs/py311/bin/python" and cmd.argv[1] == "-c" and cmd.argv[-1] == "3.0"
    assert "import torch.utils.cpp_extension as m" in cmd.argv[2]
    text = " ".join(render(plan, "text").split())  # the words, whatever the wrapping
    assert "[torch-arches] Let the installed torch build extensions for compute capability 3.0" in text
    shell = render(plan, "shell")
    assert (
        f"# --- {ids.index('torch-arches') + 1}. [torch-arches]" in shell
        and "/envs/py311/bin/python -c 'import re, sys" in shell
    )
    as_json = json.loads(render(plan, "json"))
    (row,) = [s for s in as_json["steps"] if s["id"] == "torch-arches"]
    assert row["commands"][0]["argv"][-1] == "3.0" and "compat.md §4.4" in row["why"]


def test_no_step_without_30_or_for_torch(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    vision = dataclasses.replace(options, package="torchvision")
    assert "torch-arches" not in plan_for(load(paths, "world-kepler-cu118"), vision, host, paths, {}).step_ids
    assert "torch-arches" not in plan_for(load(paths, "world-kepler-sm30"), options, host, paths, {}).step_ids
    # a catalog recipe with 3.0 gets it too
    assert "torch-arches" in plan_for(load(paths, "kepler-cu92"), vision, host, paths, {}).step_ids


def test_the_rule_says_srcbuild_patches_it(paths: Paths) -> None:
    from srcbuild.findings import Severity
    from srcbuild.rules import check_recipe

    found = [
        f for f in check_recipe(load(paths, "kepler-cu92")) if f.rule == "breakage-torchvision-sm30-supported-arches"
    ]
    assert [f.severity for f in found] == [Severity.INFO]
    assert found[0].fix.startswith(
        "srcbuild adds '3.0' to supported_arches in the installed torch's torch/utils/cpp_extension.py before "
        "building torchvision (plan step torch-arches;"
    )
