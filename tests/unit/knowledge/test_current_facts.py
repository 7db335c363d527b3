"""Facts current to torch 2.15: the release rows, what the binaries settled, and the Triton caveat."""

from __future__ import annotations

import pytest

from srcbuild.capability import ComputeCapability
from srcbuild.cli.verify import runtime_caveats
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog


def cc(text: str) -> ComputeCapability:
    return ComputeCapability.parse(text)


def test_torch_214_and_215_rows() -> None:
    kb = load_knowledge()
    t214, t215 = kb.torch("2.14.1"), kb.torch("2.15.0")
    assert t214 is not None and t215 is not None
    assert (t214.python_min, t214.python_max, t215.python_min, t215.python_max) == ("3.10", "3.14", "3.11", "3.15")
    assert kb.torchvision_for("2.14.0") == ("0.29.0",) and kb.torchvision_for("2.15.0") == ("0.29.2",)
    assert t214.wheels == {"cu126": cc("5.0"), "cu130": cc("7.5"), "cu132": cc("7.5")}
    assert "cu126" not in t215.wheels  # 2.14 is the last release with a cu126 wheel
    assert "binary: torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl sha256:" in t215.source
    assert kb.newest_known_torch == "2.15.0"


def test_the_three_wrong_facts_are_fixed() -> None:
    kb = load_knowledge()
    for version in ("9.11", "9.12", "9.13"):
        row = kb.cudnn(version)
        assert row is not None and row.lowest_cc_for("12.8") == cc("7.5"), version
    t211 = kb.torch("2.11.0")
    assert t211 is not None and t211.wheels["cu128"] == cc("7.5")
    assert kb.last_driver_for(cc("1.0")).last_cuda == "6.0"
    assert kb.last_driver_for(cc("1.3")).last_cuda == "6.5"
    for generation in ("5.2", "6.1", "7.0"):
        limit = kb.last_driver_for(cc(generation))
        assert (limit.last_branch, limit.last_cuda) == (580, "12.9")


def test_torch_compile_needs_70() -> None:
    kb = load_knowledge()
    (caveat,) = kb.runtime_caveats_for(cc("6.1"))
    assert "TORCHDYNAMO_DISABLE=1" in caveat.advice
    assert kb.runtime_caveats_for(cc("7.0")) == ()


def test_smoke_says_the_caveat_for_the_recipes_oldest_gpu() -> None:
    catalog = RecipeCatalog(Paths.resolve(environ={}))
    pascal, volta = catalog.load("pascal-cu126"), catalog.load("volta-cu126")
    (line,) = runtime_caveats(pascal)
    assert line.startswith("torch.compile (TorchInductor) needs Triton") and "(sm_60)" in line
    assert line.endswith("run eager: leave out torch.compile, or set TORCHDYNAMO_DISABLE=1")
    assert runtime_caveats(volta) == []


def test_pascal_and_volta_get_the_last_cu126_wheel_then_the_recipe_for_215(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from srcbuild.cli import main

    assert main(["compat", "--gpu", "Tesla V100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    wheel = lines.index("No build needed:")  # the command whole below it, continued with " \\"
    assert lines[wheel + 1 : wheel + 3] == [
        "  pip install torch==2.14.1 torchvision==0.29.1 --index-url \\",
        "    https://download.pytorch.org/whl/cu126",
    ]
    assert lines[wheel + 3] == "  pip installs into an environment, and none is active; make one:"  # (conftest)
    assert "Newer torch 2.15.0: srcbuild torch --recipe volta-cu126" in lines[wheel + 4 :]
    assert main(["recommend", "--gpu", "GeForce GTX 1080", "--json"]) == 0
    (gpu,) = json.loads(capsys.readouterr().out)["gpus"]
    assert gpu["lead"] == "wheel" and gpu["recommended"] == "pascal-cu126"
    assert gpu["pip"] == "pip install torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cu126"
    assert gpu["window"]["runtime_caveats"][0].endswith("set TORCHDYNAMO_DISABLE=1")
