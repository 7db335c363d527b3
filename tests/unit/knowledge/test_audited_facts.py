"""The facts an audit found wrong, as corrected, each with the primary source the data row cites."""

from __future__ import annotations

import pytest

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge import KnowledgeBase, load_knowledge


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return load_knowledge()


def CC(text: str) -> ComputeCapability:
    return ComputeCapability.parse(text)


@pytest.mark.parametrize("line", ["2.4", "2.5", "2.6", "2.7"])
def test_torch_24_to_27_ship_cudnn_91_and_later(kb: KnowledgeBase, line: str) -> None:
    release = kb.torch(line)
    assert release is not None and release.cudnn_max == "9"  # not Spack's conservative 9.0
    assert "pytorch/pytorch:RELEASE.md" in release.source and "cuDNN 9." in release.source


@pytest.mark.parametrize("patch", ["2.6.0", "2.7.0", "2.7.1"])
def test_torch_26_27_cu118_wheels_carry_sm37(kb: KnowledgeBase, patch: str) -> None:
    release = kb.torch(patch)
    assert release is not None and release.wheels["cu118"] == CC("3.7")
    assert "moi90/pytorch_compute_capabilities:table.md" in release.source


def test_newest_torch_reported_is_kept_per_capability(kb: KnowledgeBase) -> None:
    k40, k80 = kb.arch(CC("3.5")), kb.arch(CC("3.7"))
    assert k40 is not None and k40.reported_torch == "2.3.0"  # sm_37 SASS does not run on 3.5 cards
    assert "jeremistderechte/PyTorch-Kepler-Wheels" in k40.reported_source
    assert k80 is not None and k80.reported_torch == "2.7.1"


def test_official_cu118_wheels_of_torch_24_on_kepler_warn_about_cudnn_9(kb: KnowledgeBase) -> None:
    (caveat,) = kb.caveats("2.4.1", "cu118", CC("3.7"))
    assert "cuDNN 9 does not support Kepler" in caveat.message
    assert kb.caveats("2.3.1", "cu118", CC("3.7")) == ()
    assert kb.caveats("2.7.1", "cu118", CC("5.0")) == ()


@pytest.mark.parametrize("version", ["9.0", "9.1", "9.4"])
def test_cudnn_9_has_builds_for_cuda_110_to_117(kb: KnowledgeBase, version: str) -> None:
    cudnn = kb.cudnn(version)
    assert cudnn is not None and all(cudnn.has_build_for(c) for c in ("11.0", "11.3", "11.7", "11.8"))
    assert "support-matrix" in cudnn.source


@pytest.mark.parametrize(
    ("patch", "tag", "lowest"),
    [
        ("1.7.0", "cu110", "3.7"),
        ("1.7.0", "cu102", "3.5"),
        ("1.7.1", "cu92", "3.7"),
        ("1.7.1", "cu110", "3.5"),
        ("1.8.0", "cu111", "3.5"),
        ("1.8.1", "cu101", "3.7"),
        ("1.8.1", "cu111", "3.7"),
        ("1.9.0", "cu102", "3.7"),
        ("1.9.1", "cu102", "3.5"),
    ],
)
def test_lowest_sass_of_official_wheels_per_patch_release(kb: KnowledgeBase, patch: str, tag: str, lowest: str) -> None:
    release = kb.torch(patch)
    assert release is not None and release.wheels[tag] == CC(lowest)


def test_pip_commands_per_wheel_era(kb: KnowledgeBase) -> None:
    assert kb.pip_command("1.7.1", "0.8.2", "cu110") == (
        "pip install torch==1.7.1+cu110 torchvision==0.8.2+cu110 -f https://download.pytorch.org/whl/torch_stable.html"
    )
    assert kb.pip_command("1.12.1", "0.13.1", "cu102") == (
        "pip install torch==1.12.1+cu102 torchvision==0.13.1+cu102 --extra-index-url https://download.pytorch.org/whl/cu102"
    )
    assert kb.pip_command("2.13.0", "0.28.0", "cu126") == (
        "pip install torch==2.13.0 torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cu126"
    )
