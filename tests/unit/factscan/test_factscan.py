"""knowledge scan's parts without a wheel: ptxas's help, host_config.h, rows, and the comparison with
the shipped tables (agreements, contradictions, what no row covers)."""

from __future__ import annotations

import dataclasses

from srcbuild.capability import ComputeCapability
from srcbuild.factscan import nvcc
from srcbuild.factscan.compare import AGREES, CONTRADICTS, UNCOVERED, check
from srcbuild.factscan.read import LibraryKernels, WheelFacts, kind_of
from srcbuild.factscan.rows import render
from srcbuild.knowledge import load_knowledge

PTXAS_HELP = """\
--gpu-name <gpu name>                               (-arch)
        Specify name of NVIDIA GPU to generate code for. This option also takes virtual
        compute architectures, in which case code generation is suppressed.
        Allowed values for this option:  'compute_50','compute_90a','lto_50','sm_100',
        'sm_100a','sm_100f','sm_50','sm_52','sm_90','sm_90a'.
        Default value:  'sm_52'.

--help                                              (-h)
        Print this help information on this tool. 'sm_30' is not a target here.
"""

HOST_CONFIG = """\
#if defined(__GNUC__)
#if __GNUC__ > 14
#error -- unsupported GNU version! gcc versions later than 14 are not supported!
#endif /* __GNUC__ > 14 */
#if (__clang_major__ >= 20) || (__clang_major__ < 3)
#endif
#endif /* __GNUC__ */
"""


def cc(text: str) -> ComputeCapability:
    return ComputeCapability.parse(text)


def ccs(*texts: str) -> tuple[ComputeCapability, ...]:
    return tuple(cc(t) for t in texts)


def facts(**changes: object) -> WheelFacts:
    base = WheelFacts(
        file="torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        sha256="ab" * 32,
        read_on="2026-11-24",
        project="torch",
        kind="torch",
        version="2.15.0",
        local=None,
        cuda="13.2",
        python_tags=("cp311",),
        platform_tags=("manylinux_2_28_x86_64",),
        libraries=(
            LibraryKernels("torch/lib/libtorch_cuda.so", ccs("7.5", "8.0", "12.1"), ()),
            LibraryKernels("torch/lib/libtorch_cuda_linalg.so", ccs("8.0", "12.0"), ()),
            LibraryKernels("torch/lib/libtorch_cpu.so", (), ()),
        ),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_ptxas_targets_are_the_sm_values_of_gpu_name_only() -> None:
    assert nvcc.ptxas_targets(PTXAS_HELP) == ccs("5.0", "5.2", "9.0", "10.0")
    assert nvcc.ptxas_targets("no such option") == ()


def test_ptxas_names_keep_the_arch_specific_variants_apart() -> None:
    assert nvcc.ptxas_names(PTXAS_HELP) == (("50", "52", "90", "90a", "100", "100a", "100f"), ("50", "90a"))
    assert nvcc.ptxas_names("no such option") == ((), ())


def test_host_config_gcc_bounds() -> None:
    assert nvcc.gcc_bounds(HOST_CONFIG) == (None, 14)
    assert nvcc.gcc_bounds("#if __GNUC__ < 6 || __GNUC__ > 12\n") == (6, 12)


def test_kinds_by_project() -> None:
    projects = ("torch", "torchvision", "nvidia-cudnn-cu11", "nvidia-nccl-cu12", "nvidia-cuda-nvcc-cu12", "numpy")
    assert [kind_of(p) for p in projects] == ["torch", "torchvision", "cudnn", "nccl", "nvcc", "other"]


def test_lowest_sass_torch_main_library_cudnn_every_library() -> None:
    assert facts().lowest_sass() == cc("7.5")  # libtorch_cuda.so, not linalg's 8.0
    cudnn = facts(
        kind="cudnn",
        project="nvidia-cudnn-cu12",
        libraries=(
            LibraryKernels("nvidia/cudnn/lib/libcudnn_ops.so.9", ccs("7.5", "8.0"), ()),
            LibraryKernels("nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9", ccs("5.0", "7.5"), ()),
        ),
    )
    assert cudnn.lowest_sass() == cc("7.5")  # every library is needed: the highest of their lowest


def test_torch_row_with_its_evidence() -> None:
    assert render(facts())[-4:] == [
        "[[torch]]",
        'version = "2.15"',
        'official_wheels = { cu132 = "7.5" }',
        f'source = "binary: torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl sha256:{"ab" * 32}"',
    ]
    assert "#   torch/lib/libtorch_cuda_linalg.so: SASS 8.0 12.0; PTX -" in render(facts())
    assert render(facts(libraries=()))[-1] == "# no device code: a CPU wheel states no GPUs"


def test_torch_agrees_with_the_table() -> None:
    found = check(load_knowledge(), facts())
    assert [(c.fact, c.status, c.shipped, c.binary) for c in found] == [
        ("official_wheels.cu132", AGREES, "7.5", "7.5"),
        ("python_min..python_max", AGREES, "3.11 to 3.15", "3.11 to 3.15"),
    ]


def test_torch_contradictions_and_uncovered() -> None:
    wrong = check(load_knowledge(), facts(libraries=(LibraryKernels("torch/lib/libtorch_cuda.so", ccs("7.0"), ()),)))
    assert (wrong[0].status, wrong[0].shipped, wrong[0].binary) == (CONTRADICTS, "7.5", "7.0")
    old_python = check(load_knowledge(), facts(python_tags=("cp310",)))
    assert (old_python[1].status, old_python[1].binary) == (CONTRADICTS, "3.10")
    unknown_tag = check(load_knowledge(), facts(cuda="12.6"))
    assert (unknown_tag[0].fact, unknown_tag[0].status) == ("official_wheels.cu126", UNCOVERED)


def test_torchvision_pin_against_the_pairs() -> None:
    kb = load_knowledge()
    tv = facts(project="torchvision", kind="torchvision", version="0.29.0", requires_torch="==2.14.0")
    assert [(c.status, c.shipped) for c in check(kb, tv)] == [(AGREES, "2.14.0")]
    wrong = dataclasses.replace(tv, requires_torch="==2.13.0")
    assert [c.status for c in check(kb, wrong)] == [CONTRADICTS, CONTRADICTS]
    assert render(tv)[-2] == 'torchvision = { "2.14.0" = ["0.29.0"] }'


def test_cudnn_and_nvcc_rows_checked() -> None:
    kb = load_knowledge()
    cudnn = facts(
        kind="cudnn",
        project="nvidia-cudnn-cu12",
        version="9.11.0.98",
        cuda="12",
        libraries=(LibraryKernels("nvidia/cudnn/lib/libcudnn_ops.so.9", ccs("7.5", "8.0"), ()),),
    )
    assert [(c.row, c.fact, c.status) for c in check(kb, cudnn)] == [("cudnn 9.11", "lowest_cc.12", AGREES)]
    assert render(cudnn)[-3:-1] == ['version = "9.11"', 'lowest_cc = { "12" = "7.5" }']
    compiler = facts(
        kind="nvcc",
        project="nvidia-cuda-nvcc-cu12",
        version="12.9.86",
        cuda="12.9",
        libraries=(),
        ptxas_targets=ccs("5.0", "12.1"),
        ptxas_sass=kb.cuda("12.9").targets.sass,  # type: ignore[union-attr]
        ptxas_ptx=("50", "90a"),
        gcc_max=13,
    )
    assert [(c.fact, c.status) for c in check(kb, compiler)] == [
        ("sass", AGREES),
        ("ptx", CONTRADICTS),
        ("max_gcc", CONTRADICTS),
    ]
    body = render(compiler)
    assert 'sass = "50 52 53 60 61 62 70 72 75 80 86 87 89 90 90a 100 100a 100f 101 101a 101f 103 103a 103f' \
        ' 120 120a 120f 121 121a 121f"' in body
