"""verify_wheel on synthetic wheels: kernels, MPI, tags, CUDA runtime and version findings."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from srcbuild.capability import ComputeCapability
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.verify.mpi import HostMpi
from srcbuild.verify.report import VerifyReport, verify_wheel
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel

HOST_4_1 = HostMpi("openmpi", "4.1.4", "ompi_info --version")


def recipe(name: str) -> Recipe:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load(name)


def torch_wheel(
    tmp: Path,
    kernels: Sequence[tuple[str, int]],
    needed: Sequence[str],
    version: str,
    tag: str = "cp310-cp310-linux_x86_64",
    cuda_py: str | None = "'11.8'",
) -> Path:
    lib = tmp / "libtorch_cuda.so"
    write_elf(lib, fatbin_container(kernels) if kernels else b"", needed=needed, soname="libtorch_cuda.so")
    cpu = tmp / "libtorch_cpu.so"
    write_elf(cpu, b"", needed=["libc.so.6"])
    files: dict[str, Path | bytes] = {"torch/lib/libtorch_cuda.so": lib, "torch/lib/libtorch_cpu.so": cpu}
    if cuda_py is not None:
        files["torch/version.py"] = f"__version__ = '{version}'\ncuda = {cuda_py}\n".encode()
    return write_wheel(tmp, "torch", version, tag, files)


def rules(report: VerifyReport) -> list[str]:
    return [f.rule for f in report.findings]


def k80_mpi_wheel(tmp: Path, needed: Sequence[str] = ("libcudart.so.11.0", "libmpi.so.40"), **kw: object) -> Path:
    return torch_wheel(tmp, [("sass", 35), ("sass", 37)], needed, "2.0.0+cu118.sm35.sm37.mpi", **kw)  # type: ignore[arg-type]


def test_a_good_wheel_passes_with_no_findings(tmp_path: Path) -> None:
    report = verify_wheel(k80_mpi_wheel(tmp_path), recipe("kepler-k80-cu118-mpi"), host_mpi=HOST_4_1)
    assert report.ok, [f.render() for f in report.findings]
    assert report.findings == ()
    assert report.coverage_rows() == [
        {"cc": "3.5", "runs": True, "via": "SASS sm_35"},
        {"cc": "3.7", "runs": True, "via": "SASS sm_37"},
    ]
    assert report.table_rows() == [{"library": "torch/lib/libtorch_cuda.so", "sass": ["3.5", "3.7"], "ptx": []}]
    data = report.to_json()
    assert data["ok"] is True and data["kernels"] == {"sass": ["3.5", "3.7"], "ptx": []}
    assert data["cudart"] == ["libcudart.so.11.0"]


def test_missing_arch_fails_with_the_rebuild_hint(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path,
        [("sass", 35), ("sass", 37)],
        ["libcudart.so.9.2"],
        "1.7.1+cu92.sm30",
        "cp38-cp38-linux_x86_64",
        "'9.2'",
    )
    report = verify_wheel(wheel, recipe("kepler-cu92"))
    assert not report.ok
    [error] = report.errors
    assert (
        error.message == "no kernel image for compute capability 3.0: the wheel has SASS for 3.5, 3.7 and no PTX ≤ 3.0"
    )
    assert error.fix == "rebuild with gpu.arch including 3.0"
    assert report.coverage_rows() == [{"cc": "3.0", "runs": False, "via": "no kernel image"}]


def test_ptx_only_coverage_runs_through_jit(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path, [("ptx", 50)], ["libcudart.so.12"], "2.0.0+cu126.sm60.sm61", "cp312-cp312-linux_x86_64", "'12.6'"
    )
    report = verify_wheel(wheel, recipe("pascal-cu126"))
    assert report.ok, [f.render() for f in report.findings]
    assert [r["via"] for r in report.coverage_rows()] == ["PTX compute_50 (JIT)"] * 2


def test_explicit_arch_overrides_the_recipe(tmp_path: Path) -> None:
    wheel = k80_mpi_wheel(tmp_path)
    report = verify_wheel(wheel, None, [ComputeCapability.parse("5.0")])
    assert rules(report) == ["kernel-image"]
    assert report.errors[0].message.endswith("the wheel has SASS for 3.5, 3.7 and no PTX ≤ 5.0")


def test_kepler_running_on_new_ptx_is_a_warning(tmp_path: Path) -> None:
    wheel = torch_wheel(tmp_path, [("ptx", 30)], ["libcudart.so.11.0"], "2.0.0+cu118.sm35.sm37")
    report = verify_wheel(wheel, recipe("kepler-k80-cu118"))
    assert report.ok
    assert rules(report) == ["kernel-ptx-kepler", "kernel-ptx-kepler", "kernel-sass-missing"]
    assert "Kepler's last driver (R470) cannot JIT PTX newer than CUDA 11.4" in report.findings[0].message


def test_mpi_recipe_without_libmpi_names_the_cmake_warning(tmp_path: Path) -> None:
    wheel = k80_mpi_wheel(tmp_path, needed=["libcudart.so.11.0"])
    report = verify_wheel(wheel, recipe("kepler-k80-cu118-mpi"), host_mpi=HOST_4_1)
    [error] = report.errors
    assert error.rule == "mpi-not-linked"
    assert error.message == (
        f"the recipe enables MPI (openmpi 4.1) but no library in {wheel.name} links libmpi (ELF DT_NEEDED): "
        "CMake did not find MPI, printed 'Not compiling with MPI. Suppress this warning with -DUSE_MPI=OFF' "
        "and built torch.distributed without the MPI backend"
    )


@pytest.mark.parametrize(
    ("soname", "rule", "text"),
    [
        ("libmpi.so.12", "mpi-implementation", "links libmpi.so.12, which is MPICH 3.1 or newer (MPICH ABI)"),
        ("libmpi.so.20", "mpi-version", "links libmpi.so.20 (Open MPI 2.x), but the recipe asks for openmpi 4.1"),
    ],
)
def test_mpi_soname_must_match_the_recipe(tmp_path: Path, soname: str, rule: str, text: str) -> None:
    wheel = k80_mpi_wheel(tmp_path, needed=["libcudart.so.11.0", soname])
    report = verify_wheel(wheel, recipe("kepler-k80-cu118-mpi"), host_mpi=HOST_4_1)
    assert rules(report) == [rule]
    assert text in report.errors[0].message


def test_host_mpi_version_must_match_the_recipe(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path,
        [("sass", 30)],
        ["libcudart.so.9.2", "libmpi.so.40"],
        "1.7.1+cu92.sm30.mpi",
        "cp38-cp38-linux_x86_64",
        "'9.2'",
    )
    report = verify_wheel(wheel, recipe("kepler-cu92-mpi"), host_mpi=HOST_4_1)
    [error] = report.errors
    assert error.message == (
        "this host's MPI is openmpi 4.1.4 (`ompi_info --version`), but the recipe asks for openmpi 4.0; "
        "CMake links the MPI it finds on PATH"
    )
    assert error.fix == 'put openmpi 4.0\'s mpicc/mpicxx first on PATH and rebuild, or set mpi.version = "4.1"'


def test_libmpi_without_mpi_recipe_is_a_warning(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path, [("sass", 35), ("sass", 37)], ["libcudart.so.11.0", "libmpi.so.40"], "2.0.0+cu118.sm35.sm37"
    )
    report = verify_wheel(wheel, recipe("kepler-k80-cu118"))
    assert report.ok and rules(report) == ["mpi-unexpected"]


def test_tags_and_local_version(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path, [("sass", 35), ("sass", 37)], ["libcudart.so.11.0"], "2.0.0+cu118.sm35", "cp311-cp311-win_amd64"
    )
    report = verify_wheel(wheel, recipe("kepler-k80-cu118"))
    assert rules(report) == ["wheel-python-tag", "wheel-platform", "wheel-local-version"]
    messages = [f.message for f in report.findings]
    assert messages[0] == f'{wheel.name}: Python tag cp311 does not match toolchain.python = "3.10" (expected cp310)'
    assert (
        messages[2] == f"{wheel.name}: version 2.0.0+cu118.sm35 has +cu118.sm35, expected +cu118.sm35.sm37"
        " (the recipe's build label)"
    )


def test_python37_needs_the_m_abi_tag(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path,
        [("sass", 30), ("ptx", 30)],
        ["libcudart.so.9.2"],
        "1.7.1+cu92.sm30",
        "cp38-cp38m-linux_x86_64",
        "'9.2'",
    )
    assert rules(verify_wheel(wheel, recipe("kepler-cu92"))) == ["wheel-abi-tag"]


def test_what_the_arch_list_asked_for_is_there(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path,
        [("sass", 50), ("ptx", 50)],
        ["libcudart.so.12"],
        "2.0.0+cu126.sm60.sm61",
        "cp312-cp312-linux_x86_64",
        "'12.6'",
    )
    report = verify_wheel(wheel, recipe("pascal-cu126"))
    assert report.ok
    assert [f.message for f in report.findings] == [
        "gpu.arch asks for SASS for 6.0, 6.1 but the wheel has SASS only for 5.0; "
        "those GPUs fall back to another image",
        "gpu.ptx = true asks for PTX for compute_61 but the wheel has PTX only for 5.0; newer GPUs cannot JIT it",
    ]


@pytest.mark.parametrize(
    ("needed", "cuda_py", "message"),
    [
        (
            ["libcudart.so.10.2"],
            "'9.2'",
            'torch/lib/libtorch_cuda.so links libcudart.so.10.2 (CUDA 10.2), but toolchain.cuda = "9.2"',
        ),
        (["libcudart.so.9.2"], "'9.0'", "torch/version.py says cuda = '9.0', but toolchain.cuda = \"9.2\""),
        (["libcudart.so.9.2"], "None", "torch/version.py says cuda = None: the wheel was built without CUDA"),
    ],
)
def test_cuda_runtime_must_match(tmp_path: Path, needed: list[str], cuda_py: str, message: str) -> None:
    wheel = torch_wheel(tmp_path, [("sass", 30)], needed, "1.7.1+cu92.sm30", "cp38-cp38-linux_x86_64", cuda_py)
    report = verify_wheel(wheel, recipe("kepler-cu92"))
    assert [f.message for f in report.errors] == [message]


def test_cuda11_soname_names_only_the_major(tmp_path: Path) -> None:
    wheel = torch_wheel(tmp_path, [("sass", 35), ("sass", 37)], ["libcudart.so.12"], "2.0.0+cu118.sm35.sm37")
    report = verify_wheel(wheel, recipe("kepler-k80-cu118"))
    assert [f.message for f in report.errors] == [
        'torch/lib/libtorch_cuda.so links libcudart.so.12 (CUDA 12.x), but toolchain.cuda = "11.8"'
    ]
