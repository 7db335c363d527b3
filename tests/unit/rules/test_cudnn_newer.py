"""The cuDNN rules on the releases after 9.13: a pin the table knows is checked, not warned about."""

from __future__ import annotations

import pytest
from rule_combos import catalog, combo

from srcbuild.findings import Finding, Severity
from srcbuild.rules import check_recipe


def cudnn_findings(cuda: str, cudnn: str, arch: tuple[str, ...]) -> list[Finding]:
    """The cuDNN rules' findings on the Volta recipe with these pins (its torch 2.15.0 stays)."""
    findings = check_recipe(combo("volta-cu126", cuda=cuda, cudnn=cudnn, arch=arch), catalog=catalog())
    return [f for f in findings if f.rule.startswith("cudnn")]


@pytest.mark.parametrize("cuda", ["12.6", "12.9", "13.0", "13.2"])
def test_cudnn_919_on_turing_is_known_and_fits(cuda: str) -> None:
    assert cudnn_findings(cuda=cuda, cudnn="9.19", arch=("7.5",)) == []


@pytest.mark.parametrize("cuda", ["12.6", "13.0"])
def test_cudnn_919_is_never_unknown(cuda: str) -> None:
    rules = {f.rule for f in cudnn_findings(cuda=cuda, cudnn="9.19", arch=("7.0",))}
    assert "cudnn-unknown" not in rules


def test_cudnn_919_rejects_volta_with_the_releases_that_still_serve_it() -> None:
    (finding,) = cudnn_findings(cuda="12.6", cudnn="9.19", arch=("7.0",))
    assert finding.rule == "cudnn-arch" and finding.severity is Severity.ERROR
    assert finding.message == "cuDNN 9.19 for CUDA 12.x supports compute capability 7.5 and later, not 7.0."
    assert finding.fix == (
        "Use cuDNN 8.9 to 9.10: each has a build for CUDA 12.6 that supports compute capability 7.0. "
        "Or drop cudnn from [toolchain]."
    )
    assert "binary: nvidia_cudnn_cu12-9.19.0.56-" in finding.source


def test_a_turing_build_is_offered_the_newest_cudnn() -> None:
    (finding,) = cudnn_findings(cuda="13.0", cudnn="9.10", arch=("7.5",))
    assert finding.rule == "cudnn-cuda"
    assert finding.fix == (
        "Use cuDNN 9.12 to 9.28: each has a build for CUDA 13.0 that supports compute capability 7.5. "
        "Or drop cudnn from [toolchain]."
    )
