"""Every impossible combination is rejected by the right rule with its exact message; valid ones pass."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from rule_combos import catalog, combo

from srcbuild.findings import Finding, Severity, has_errors
from srcbuild.rules import check_recipe


class Case(NamedTuple):
    id: str
    recipe: dict[str, Any]
    rule: str
    message: str
    fix: str


def findings_for(spec: dict[str, Any]) -> list[Finding]:
    spec = dict(spec)
    return check_recipe(combo(spec.pop("name"), **spec), catalog=catalog())


IMPOSSIBLE = [
    Case(
        "cuda113-sm30",
        dict(name="kepler-cu92", cuda="11.3", gcc="7"),
        "cuda-arch",
        "CUDA 11.3 cannot target compute capability 3.0 (nvcc 11.0 removed sm_30).",
        "Use CUDA ≤ 10.2, e.g. the recipe kepler-cu102.",
    ),
    Case(
        "cuda110-sm30",
        dict(name="kepler-cu92", cuda="11.0", gcc="7"),
        "cuda-arch",
        "CUDA 11.0 cannot target compute capability 3.0 (nvcc 11.0 removed sm_30).",
        "Use CUDA ≤ 10.2, e.g. the recipe kepler-cu102.",
    ),
    Case(
        "cuda110-sm32",
        dict(name="kepler-cu92", cuda="11.0", gcc="7", arch=("3.2",)),
        "cuda-arch",
        "CUDA 11.0 cannot target compute capability 3.2 (nvcc 11.0 removed sm_32).",
        "Use CUDA ≤ 10.2.",
    ),
    Case(
        "cuda121-sm35",
        dict(name="kepler-k80-cu118", cuda="12.1"),
        "cuda-arch",
        "CUDA 12.1 cannot target compute capability 3.5 (nvcc 12.0 removed sm_35).",
        "Use CUDA ≤ 11.8, e.g. the recipe kepler-k80-torch28.",
    ),
    Case(
        "cuda124-sm37",
        dict(name="kepler-k80-cu118", cuda="12.4", arch=("3.7",)),
        "cuda-arch",
        "CUDA 12.4 cannot target compute capability 3.7 (nvcc 12.0 removed sm_37).",
        "Use CUDA ≤ 11.8, e.g. the recipe kepler-k80-torch28.",
    ),
    Case(
        "cuda130-sm50",
        dict(name="maxwell-cu126", cuda="13.0"),
        "cuda-arch",
        "CUDA 13.0 cannot target compute capability 5.0 (nvcc 13.0 removed sm_50).",
        "Use CUDA ≤ 12.9, e.g. the recipe maxwell-cu126.",
    ),
    Case(
        "cuda130-sm61",
        dict(name="pascal-cu126", cuda="13.0"),
        "cuda-arch",
        "CUDA 13.0 cannot target compute capability 6.0 (nvcc 13.0 removed sm_60).",
        "Use CUDA ≤ 12.9, e.g. the recipe pascal-cu126.",
    ),
    Case(
        "cuda92-sm21",
        dict(name="kepler-cu92", arch=("2.1",)),
        "cuda-arch",
        "CUDA 9.2 cannot target compute capability 2.1 (nvcc 9.0 removed sm_21).",
        "Use CUDA ≤ 8.0.",
    ),
    Case(
        "cuda102-sm20",
        dict(name="kepler-cu102", arch=("2.0",)),
        "cuda-arch",
        "CUDA 10.2 cannot target compute capability 2.0 (nvcc 9.0 removed sm_20).",
        "Use CUDA ≤ 8.0.",
    ),
    Case(
        "cuda102-sm86",
        dict(name="kepler-cu102", arch=("3.0", "8.6")),
        "cuda-arch",
        "CUDA 10.2 cannot target compute capability 8.6 (sm_86 arrived with nvcc 11.1).",
        "Use CUDA ≥ 11.1.",
    ),
    Case(
        "cuda92-gcc8",
        dict(name="kepler-cu92", gcc="8"),
        "gcc-cuda",
        "CUDA 9.2 accepts host gcc ≤ 7, not gcc 8 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 7, or CUDA 10.1 or later for gcc 8.",
    ),
    Case(
        "cuda102-gcc9",
        dict(name="kepler-cu102", gcc="9"),
        "gcc-cuda",
        "CUDA 10.2 accepts host gcc ≤ 8, not gcc 9 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 8.",
    ),
    Case(
        "cuda118-gcc12",
        dict(name="kepler-k80-cu118", gcc="12"),
        "gcc-cuda",
        "CUDA 11.8 accepts host gcc ≤ 11, not gcc 12 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 11.",
    ),
    Case(
        "cuda1140-gcc11",
        dict(name="kepler-k80-cu118", cuda="11.4.0"),
        "gcc-cuda",
        "CUDA 11.4.0 accepts host gcc ≤ 10, not gcc 11 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 10, or CUDA 11.4.1 or later for gcc 11.",
    ),
    Case(
        "cuda126-gcc14",
        dict(name="maxwell-cu126", gcc="14"),
        "gcc-cuda",
        "CUDA 12.6 accepts host gcc ≤ 13, not gcc 14 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 13, or CUDA 12.8 or later for gcc 14.",
    ),
    Case(
        "cuda122-gcc13",
        dict(name="maxwell-cu126", cuda="12.2"),
        "gcc-cuda",
        "CUDA 12.2 accepts host gcc ≤ 12, not gcc 13 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 12, or CUDA 12.4 or later for gcc 13.",
    ),
    Case(
        "cuda129-gcc15",
        dict(name="pascal-cu126", cuda="12.9", gcc="15"),
        "gcc-cuda",
        "CUDA 12.9 accepts host gcc ≤ 14, not gcc 15 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 14.",
    ),
    Case(
        "cuda113-gcc4",
        dict(name="pascal-mx150-cu113", gcc="4"),
        "gcc-cuda",
        "CUDA 11.3 needs host gcc ≥ 5, not gcc 4.",
        "Use gcc 5 to 10.",
    ),
    Case(
        "cuda110-gcc10",
        dict(name="pascal-mx150-cu113", cuda="11.0", cudnn="8.0", gcc="10"),
        "gcc-cuda",
        "CUDA 11.0 accepts host gcc ≤ 9, not gcc 10 (its crt/host_config.h rejects newer gcc).",
        "Use gcc 9, or CUDA 11.1 or later for gcc 10.",
    ),
    Case(
        "cuda90-gcc6-torch14",
        dict(name="kepler-cu92", torch="v1.4.1", torchvision="v0.5.0", python="3.7", gcc="6", cuda="9.0", cudnn="7.6"),
        "breakage-cuda90-gcc6-tuple",
        (
            "torch 1.4.1 with CUDA 9.0 or 9.1 and gcc 6 or newer: PyTorch's CMake stops: "
            "CUDA 9.0 & 9.1 are not compatible with std::tuple from GCC version >= 6."
        ),
        "Use CUDA 9.2 or later, or gcc 5.",
    ),
    Case(
        "torch20-cuda102",
        dict(name="kepler-cu102", torch="v2.0.1", torchvision="v0.15.2", arch=("3.5",)),
        "torch-cuda",
        "torch 2.0.1 needs CUDA ≥ 11.0, not CUDA 10.2.",
        "Use CUDA 11.0 or later, or torch 1.13.x, the newest line that accepts CUDA 10.2.",
    ),
    Case(
        "torch110-cuda115",
        dict(name="pascal-mx150-cu113", torch="v1.10.2", torchvision="v0.11.3", cuda="11.5", gcc="10"),
        "torch-cuda",
        "torch 1.10.2 accepts CUDA ≤ 11.4, not CUDA 11.5.",
        "Use CUDA 11.4 or older, or torch 1.11 or later for CUDA 11.5.",
    ),
    Case(
        "torch29-cuda118",
        dict(name="kepler-k80-cu118", torch="v2.9.0", torchvision="v0.24.0", arch=("5.0",)),
        "torch-cuda",
        "torch 2.9.0 needs CUDA ≥ 12.0, not CUDA 11.8.",
        "Use CUDA 12.0 or later, or torch 2.8.x, the newest line that accepts CUDA 11.8.",
    ),
    Case(
        "torch16-cuda90",
        dict(name="kepler-cu92", torch="v1.6.0", torchvision="v0.7.0", cuda="9.0", gcc="5"),
        "torch-cuda",
        "torch 1.6.0 needs CUDA ≥ 9.2, not CUDA 9.0.",
        "Use CUDA 9.2 or later, or torch 1.5.x, the newest line that accepts CUDA 9.0.",
    ),
    Case(
        "torch212-cuda124",
        dict(name="maxwell-cu126", torch="v2.12.0", torchvision="v0.27.0", cuda="12.4"),
        "torch-cuda",
        "torch 2.12.0 needs CUDA ≥ 12.6, not CUDA 12.4.",
        "Use CUDA 12.6 or later, or torch 2.11.x, the newest line that accepts CUDA 12.4.",
    ),
    Case(
        "torch231-cuda124",
        dict(name="maxwell-cu126", torch="v2.3.1", torchvision="v0.18.1", cuda="12.4", cudnn="9.0", python="3.11"),
        "torch-cuda",
        "torch 2.3.1 accepts CUDA ≤ 12.3, not CUDA 12.4.",
        "Use CUDA 12.3 or older, or torch 2.4 or later for CUDA 12.4.",
    ),
    Case(
        "torch110-py311",
        dict(name="kepler-cu102", python="3.11"),
        "torch-python",
        "torch 1.10.2 supports Python 3.6 to 3.9, not Python 3.11.",
        "Use Python 3.9, or torch 2.0 or later for Python 3.11.",
    ),
    Case(
        "torch170-py39",
        dict(name="kepler-cu92", torch="v1.7.0", torchvision="v0.8.1", python="3.9"),
        "torch-python",
        "torch 1.7.0 supports Python 3.6 to 3.8, not Python 3.9.",
        "Use Python 3.8, or torch 1.8 or later for Python 3.9.",
    ),
    Case(
        "torch29-py39",
        dict(name="maxwell-cu126", torch="v2.9.0", torchvision="v0.24.0", python="3.9"),
        "torch-python",
        "torch 2.9.0 supports Python 3.10 to 3.14, not Python 3.9.",
        "Use Python 3.10 to 3.14.",
    ),
    Case(
        "torch251-py314",
        dict(name="kepler-k80-cu118", python="3.14"),
        "torch-python",
        "torch 2.5.1 supports Python 3.9 to 3.13, not Python 3.14.",
        "Use Python 3.13, or torch 2.9 or later for Python 3.14.",
    ),
    Case(
        "torch251-gcc8",
        dict(name="kepler-k80-cu118", gcc="8"),
        "torch-gcc",
        "torch 2.5.1 needs gcc ≥ 9.4, not gcc 8.",
        "Use gcc 9.4 or later (CUDA 11.8 accepts up to gcc 11).",
    ),
    Case(
        "torch171-gcc4",
        dict(name="kepler-cu92", gcc="4"),
        "torch-gcc",
        "torch 1.7.1 needs gcc ≥ 5, not gcc 4.",
        "Use gcc 5 or later (CUDA 9.2 accepts up to gcc 7).",
    ),
    Case(
        "torch231-cudnn82",
        dict(name="kepler-k80-cu118", torch="v2.3.1", torchvision="v0.18.1", cudnn="8.2"),
        "torch-cudnn",
        "torch 2.3.1 accepts cuDNN 8.5 to 9.0, not cuDNN 8.2.",
        "Use cuDNN 8.5 to 9.0, or drop cudnn from [toolchain] to build without it.",
    ),
    Case(
        "torch141-cudnn80",
        dict(name="kepler-cu102", torch="v1.4.1", torchvision="v0.5.0", python="3.7", cudnn="8.0"),
        "torch-cudnn",
        "torch 1.4.1 accepts only cuDNN 7, not cuDNN 8.0.",
        "Use cuDNN 7, or drop cudnn from [toolchain] to build without it.",
    ),
    Case(
        "cudnn90-sm35",
        dict(name="kepler-k80-cu118", cudnn="9.0"),
        "cudnn-arch",
        "cuDNN 9.0 for CUDA 11.x supports compute capability 5.0 and later, not 3.5 (cuDNN 9.0 has no Kepler support).",
        (
            "Use cuDNN 8.2 to 8.5: each has a build for CUDA 11.8 that "
            "supports compute capability 3.5. Or drop cudnn from [toolchain]."
        ),
    ),
    Case(
        "cudnn89-sm37",
        dict(name="kepler-k80-cu118", cudnn="8.9", arch=("3.7",)),
        "cudnn-arch",
        "cuDNN 8.9 for CUDA 11.x supports compute capability 5.0 and later, not 3.7 (cuDNN 8.9 has no Kepler support).",
        (
            "Use cuDNN 8.2 to 8.5: each has a build for CUDA 11.8 that "
            "supports compute capability 3.7. Or drop cudnn from [toolchain]."
        ),
    ),
    Case(
        "cudnn80-cuda110-sm30",
        dict(name="kepler-cu92", cuda="11.0", gcc="7", cudnn="8.0"),
        "cudnn-arch",
        "cuDNN 8.0 for CUDA 11.x supports compute capability 3.5 and later, not 3.0.",
        (
            "No cuDNN release has a build for CUDA 11.0 that supports compute "
            "capability 3.0; drop cudnn from [toolchain] to build without it."
        ),
    ),
    Case(
        "cudnn85-cuda102",
        dict(name="kepler-cu102", cudnn="8.5"),
        "cudnn-cuda",
        "cuDNN 8.5 has no build for CUDA 10.2 (NVIDIA published it for CUDA 11.x).",
        (
            "Use cuDNN 7.6 to 8.4: each has a build for CUDA 10.2 that "
            "supports compute capability 3.0. Or drop cudnn from [toolchain]."
        ),
    ),
    Case(
        "cudnn80-cuda92",
        dict(name="kepler-cu92", cudnn="8.0"),
        "cudnn-cuda",
        "cuDNN 8.0 has no build for CUDA 9.2 (NVIDIA published it for CUDA 10.1, 10.2, 11.0, 11.1).",
        (
            "Use cuDNN 7.1 to 7.6: each has a build for CUDA 9.2 that "
            "supports compute capability 3.0. Or drop cudnn from [toolchain]."
        ),
    ),
    Case(
        "cudnn85-cuda126",
        dict(name="maxwell-cu126", cudnn="8.5"),
        "cudnn-cuda",
        "cuDNN 8.5 has no build for CUDA 12.6 (NVIDIA published it for CUDA 11.x).",
        (
            "Use cuDNN 8.9 to 9.10: each has a build for CUDA 12.6 that "
            "supports compute capability 5.0. Or drop cudnn from [toolchain]."
        ),
    ),
    Case(
        "cudnn76-cuda91",
        dict(name="kepler-cu92", torch="v1.4.1", torchvision="v0.5.0", gcc="5", cuda="9.1"),
        "cudnn-cuda",
        "cuDNN 7.6 has no build for CUDA 9.1 (NVIDIA published it for CUDA 9.0, 9.2, 10.0, 10.1, 10.2).",
        (
            "Use cuDNN 7.0 to 7.1: each has a build for CUDA 9.1 that "
            "supports compute capability 3.0. Or drop cudnn from [toolchain]."
        ),
    ),
    Case(
        "tv090-torch171",
        dict(name="kepler-cu92", torchvision="v0.9.0"),
        "torchvision-torch",
        "torchvision 0.9.0 belongs to torch 1.8.0, not torch 1.7.1.",
        "Use torchvision v0.8.2.",
    ),
    Case(
        "tv080-torch171",
        dict(name="kepler-cu92", torchvision="v0.8.0"),
        "torchvision-torch",
        "torchvision 0.8.0 belongs to torch 1.7.0, not torch 1.7.1.",
        "Use torchvision v0.8.2.",
    ),
    Case(
        "tv0201-torch241",
        dict(name="kepler-k80-cu118", torch="v2.4.1"),
        "torchvision-torch",
        "torchvision 0.20.1 belongs to torch 2.5.1, not torch 2.4.1.",
        "Use torchvision v0.19.1.",
    ),
    Case(
        "torch201-sm30",
        dict(name="kepler-cu92", torch="v2.0.1", torchvision="v0.15.2", cuda="11.0", python="3.9", gcc="9"),
        "torch-arch",
        (
            "torch 2.0.1 cannot be built for compute capability 3.0: it "
            "needs CUDA ≥ 11.0, and CUDA 10.2 was the last to target 3.0."
        ),
        "Use torch ≤ 1.13.x, e.g. the recipe kepler-cu102.",
    ),
    Case(
        "torch29-sm37",
        dict(name="maxwell-cu126", torch="v2.9.0", torchvision="v0.24.0", arch=("3.7", "5.0")),
        "torch-arch",
        (
            "torch 2.9.0 cannot be built for compute capability 3.7: it "
            "needs CUDA ≥ 12.0, and CUDA 11.8 was the last to target 3.7."
        ),
        "Use torch ≤ 2.8.x, e.g. the recipe kepler-k80-torch28.",
    ),
    Case(
        "sm30-nccl-cu102",
        dict(name="kepler-cu102", env={"BUILD_TEST": "0"}),
        "breakage-nccl-sm30",
        (
            "torch 1.10.2 with the bundled NCCL on compute capability 3.0: NCCL device code fails "
            "to compile for sm_30 (it uses __funnelshift_r, which needs compute capability 3.2)."
        ),
        (
            "Set USE_NCCL=0 in [build] env, or build NCCL for sm_30 "
            '(NVCC_GENCODE="-gencode=arch=compute_30,code=sm_30", NCCL v2.9.9-1 works) and set USE_SYSTEM_NCCL=1.'
        ),
    ),
    Case(
        "sm30-nccl-cu92",
        dict(name="kepler-cu92", env={}),
        "breakage-nccl-sm30",
        (
            "torch 1.7.1 with the bundled NCCL on compute capability 3.0: NCCL device code fails "
            "to compile for sm_30 (it uses __funnelshift_r, which needs compute capability 3.2)."
        ),
        (
            "Set USE_NCCL=0 in [build] env, or build NCCL for sm_30 "
            '(NVCC_GENCODE="-gencode=arch=compute_30,code=sm_30", NCCL v2.9.9-1 works) and set USE_SYSTEM_NCCL=1.'
        ),
    ),
]

VALID = [
    # CUDA 11.4.1 and later accept gcc 11 (11.4.0 does not: see cuda1140-gcc11 above)
    ("cuda1141-gcc11", dict(name="kepler-k80-cu118", cuda="11.4.1"), ["gcc-cuda-caveat"]),
    # cuda = "11.4" does not say whether the build gets 11.4.0: a warning, not an error
    ("cuda114-gcc11", dict(name="kepler-k80-cu118", cuda="11.4"), ["gcc-cuda-patch", "gcc-cuda-caveat"]),
    (
        "cuda123-gcc12",
        dict(name="maxwell-cu126", torch="v2.11.0", torchvision="v0.26.0", cuda="12.3", gcc="12"),
        [],
    ),
    (
        "sm30-system-nccl",
        dict(name="kepler-cu102", env={"USE_SYSTEM_NCCL": "1"}),
        [],  # torchvision-sm30-supported-arches: srcbuild patches it (an info note)
    ),
    (
        "torch1131-sm30-ceiling",
        dict(name="kepler-cu102", torch="v1.13.1", torchvision="v0.14.1", python="3.10", cudnn="8.4"),
        [],
    ),
    (
        "torch280-sm37-ceiling",
        dict(name="kepler-k80-cu118", torch="v2.8.0", torchvision="v0.23.0", python="3.12", arch=("3.7",), ptx=True),
        ["driver-cuda", "kepler-ptx"],
    ),
    (
        "torch171-py39",
        dict(name="kepler-cu92", python="3.9", env={"USE_NCCL": "0"}),
        ["breakage-ldg-sm30"],
    ),
    ("pascal-cu129-gcc14", dict(name="pascal-cu126", cuda="12.9", gcc="14"), []),
    ("cpu-only", dict(name="kepler-cu102", cuda=None, cudnn=None, arch=()), []),
    (
        "torch1102-cu114-sm35",
        dict(name="kepler-cu102", cuda="11.4", gcc="10", cudnn="8.2", arch=("3.5",)),
        ["gcc-cuda-caveat"],
    ),
    ("torch1102-cu102-gcc7", dict(name="kepler-cu102", gcc="7"), []),
]


def test_there_are_enough_cases() -> None:
    assert len(IMPOSSIBLE) >= 40
    assert len(VALID) >= 10


@pytest.mark.parametrize("case", IMPOSSIBLE, ids=[c.id for c in IMPOSSIBLE])
def test_impossible_combination_is_rejected(case: Case) -> None:
    errors = [f for f in findings_for(case.recipe) if f.severity is Severity.ERROR]
    matching = [f for f in errors if f.rule == case.rule]
    assert matching, [f.render() for f in errors]
    assert (matching[0].message, matching[0].fix) == (case.message, case.fix)
    assert matching[0].source or matching[0].rule.startswith("torchvision")


@pytest.mark.parametrize(("case_id", "spec", "warnings"), VALID, ids=[v[0] for v in VALID])
def test_valid_combination_is_accepted(case_id: str, spec: dict[str, Any], warnings: list[str]) -> None:
    findings = findings_for(spec)
    assert not has_errors(findings), [f.render() for f in findings]
    assert [f.rule for f in findings if f.severity is Severity.WARNING] == warnings


@pytest.mark.parametrize("recipe", catalog(), ids=lambda r: r.name)
def test_catalog_recipe_has_no_errors(recipe: Any) -> None:
    findings = check_recipe(recipe, catalog=catalog())
    assert not has_errors(findings), [f.render() for f in findings]


def test_findings_come_errors_first_and_all_at_once() -> None:
    findings = findings_for(dict(name="kepler-cu92", cuda="11.3", gcc="12", python="3.11", torchvision="v0.9.0"))
    rules = [f.rule for f in findings if f.severity is Severity.ERROR]
    assert {"cuda-arch", "gcc-cuda", "torch-python", "torchvision-torch", "cudnn-cuda"} <= set(rules)
    severities = [f.severity for f in findings]
    assert severities == sorted(severities, key=[Severity.ERROR, Severity.WARNING, Severity.INFO].index)


def test_exact_rendering_of_one_finding() -> None:
    (finding,) = [f for f in findings_for(dict(name="kepler-cu92", cuda="11.3", gcc="7")) if f.rule == "cuda-arch"]
    assert finding.render().splitlines() == [
        "error: CUDA 11.3 cannot target compute capability 3.0 (nvcc 11.0 removed sm_30). (source: "
        + finding.source
        + ")",
        "  fix: Use CUDA ≤ 10.2, e.g. the recipe kepler-cu102.",
    ]
    assert finding.field == "gpu.arch"
    assert "cuda@5.0:10.2" in finding.source


def test_unknown_versions_warn_instead_of_failing() -> None:
    findings = findings_for(dict(name="maxwell-cu126", torch="main", torchvision=None, cuda="12.7", cudnn="9.99"))
    assert not has_errors(findings)
    assert {f.rule for f in findings} >= {"torch-unknown", "cuda-unknown", "cudnn-unknown"}


def test_unconfirmed_facts_only_warn() -> None:
    findings = findings_for(dict(name="kepler-cu92", env={"USE_NCCL": "0"}))
    ldg = [f for f in findings if f.rule == "breakage-ldg-sm30"]
    assert [f.severity for f in ldg] == [Severity.WARNING]
    resolved = findings_for(dict(name="kepler-cu92", env={"USE_NCCL": "0", "BUILD_CAFFE2_OPS": "0"}))
    assert not [f for f in resolved if f.rule == "breakage-ldg-sm30"]


def test_kepler_ptx_with_newer_cuda_than_r470_warns() -> None:
    findings = findings_for(dict(name="kepler-k80-cu118", ptx=True))
    (ptx,) = [f for f in findings if f.rule == "kepler-ptx"]
    assert ptx.message == (
        "ptx = true embeds CUDA 11.8 PTX, which the last Kepler driver (R470, CUDA 11.4) cannot JIT-compile; "
        "Kepler GPUs only run the SASS built for [gpu] arch."
    )
    assert ptx.fix == "List every compute capability you run on in [gpu] arch and set ptx = false."


def test_driver_warning_for_kepler_on_cuda_11_8() -> None:
    (driver,) = [f for f in findings_for(dict(name="kepler-k80-cu118", ptx=True)) if f.rule == "driver-cuda"]
    assert driver.severity is Severity.WARNING
    # the catalog recipe keeps SASS for every GPU (ptx = false), so it follows the fix: only a note
    (note,) = [f for f in findings_for(dict(name="kepler-k80-cu118")) if f.rule == "driver-cuda"]
    assert note.severity is Severity.INFO
    assert driver.message == (
        "CUDA 11.8 needs driver ≥ 520.61.05, but the last driver for Kepler GPUs (compute capability 3.5) is R470, "
        "which natively runs CUDA ≤ 11.4."
    )


def test_handled_breakages_say_what_srcbuild_does() -> None:
    notes = {f.rule: f for f in findings_for(dict(name="kepler-cu102")) if f.severity is Severity.INFO}
    assert notes["breakage-setuptools-distutils-version"].fix == (
        "srcbuild installs setuptools<=59.5.0 in the build environment."
    )
    assert "breakage-numpy2" in notes
