"""The complete-home contract: which CUDA homes lack what, and the preflight finding that says so."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from srcbuild.findings import Severity
from srcbuild.host.facts import CudaToolkit, HostFacts
from srcbuild.host.toolchain import missing_components
from srcbuild.knowledge.cuda_components import components_for, load_components
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.rules.host import check_cuda_complete
from srcbuild.toolchain.data_files import load_facts
from tests.worlds.cuda_home import make_home


def test_every_row_names_its_torch_file_and_source() -> None:
    rows = load_components()
    assert {c.name for c in rows} >= {
        "cccl", "cudart", "cublas", "cufft", "curand", "cusolver", "cusparse", "nvtx", "nvrtc", "cupti",
        "cudart-static", "driver-stub",
    }
    assert all(c.needed_by and c.source and (c.headers or c.files) for c in rows)


def test_a_complete_home_lacks_nothing(tmp_path: Path) -> None:
    assert missing_components(make_home(tmp_path, "11.8"), "11.8.89") == ()


def test_the_home_the_debian_packages_alone_made(tmp_path: Path) -> None:
    """nvcc, cudart and the runtime headers only: what the Debian route made before the wheels."""
    home = make_home(tmp_path, "11.8", skip=("cccl", "cublas", "cusparse", "cusolver", "curand", "cufft",
                                            "nvrtc", "nvtx", "cupti"))
    assert missing_components(home, "11.8.89") == (
        "cccl", "cublas", "cusparse", "cusolver", "curand", "cufft", "nvrtc", "nvtx", "cupti"
    )


def test_a_versioned_library_without_its_linker_name_is_missing(tmp_path: Path) -> None:
    home = make_home(tmp_path, "11.8")
    (home / "lib64" / "libcusparse.so").unlink()
    assert missing_components(home, "11.8") == ("cusparse",)


def test_torchs_configure_needs_the_static_runtime_and_the_driver_stub(tmp_path: Path) -> None:
    """What torch's CMake links at configure: a home without them fails its CUDA compiler
    identification (``cannot find -lcudadevrt``) or leaves CUDA_CUDA_LIB NOTFOUND."""
    home = make_home(tmp_path, "11.8")
    (home / "lib64" / "libcudadevrt.a").unlink()
    (home / "lib64" / "stubs" / "libcuda.so").unlink()
    assert missing_components(home, "11.8.89") == ("cudart-static", "driver-stub")
    (home / "lib" / "stubs").mkdir(parents=True)
    (home / "lib" / "stubs" / "libcuda.so").write_text("")  # lib/ counts like lib64/
    (home / "lib64" / "libcudadevrt.a").mkdir()  # a directory is not the archive
    assert missing_components(home, "11.8.89") == ("cudart-static",)


def test_the_preflight_names_the_files_a_component_lacks(tmp_path: Path) -> None:
    recipe, host = recipe_host(tmp_path, ("driver-stub",), "CUDA_HOME")
    [finding] = check_cuda_complete(recipe, host)
    assert "driver-stub (stubs/libcuda.so; cmake/public/cuda.cmake (CUDA_CUDA_LIB, linked by caffe2_nvrtc))" in (
        finding.message
    )


def test_cuda13_cccl_under_include_cccl_and_nvtx3(tmp_path: Path) -> None:
    home = make_home(tmp_path, "13.0", layout="cccl")
    assert (home / "include" / "cccl" / "thrust" / "complex.h").is_file()
    assert missing_components(home, "13.0.88") == ()
    assert [c.libraries for c in components_for("13.0") if c.name == "nvtx"] == [()]


def recipe_host(tmp_path: Path, missing: tuple[str, ...], source: str, contract: str = "error") -> tuple:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-k80-cu118")
    home = tmp_path / "cuda-11.8"
    toolkit = CudaToolkit("11.8.89", home, home / "bin" / "nvcc", source, missing)
    return recipe, HostFacts(cuda_toolkits=(toolkit,), cuda_contract=contract)


def test_the_preflight_names_component_torch_file_and_command(tmp_path: Path) -> None:
    recipe, host = recipe_host(tmp_path, ("cccl", "cusparse"), "CUDA_HOME")
    [finding] = check_cuda_complete(recipe, host)
    assert finding.severity is Severity.ERROR and finding.field == "toolchain.cuda"
    assert finding.message == (
        f"the CUDA 11.8 home {tmp_path / 'cuda-11.8'} lacks what a torch build compiles: "
        "cccl (thrust/complex.h, thrust/sort.h, cub/cub.cuh; c10/util/complex.h (thrust) and "
        "aten/src/ATen/cuda/cub.cuh (cub)); cusparse (cusparse.h; aten/src/ATen/cuda/CUDAContext.h)"
    )
    assert finding.fix == (
        "run `srcbuild toolchain install cuda 11.8` (a complete home from NVIDIA's packages, which "
        "srcbuild then uses, once you `unset CUDA_HOME`); or `export SRCBUILD_CUDA_CONTRACT=warn` if "
        "your build includes none of these"
    )


def test_a_provisioned_home_names_its_provider(tmp_path: Path) -> None:
    recipe, host = recipe_host(tmp_path, ("cublas",), "srcbuild toolchain cuda-11.8-debian")
    [finding] = check_cuda_complete(recipe, host)
    assert finding.fix.startswith("run `srcbuild toolchain install cuda 11.8 --from debian` (a complete home")


def test_warn_keeps_the_finding_as_a_warning(tmp_path: Path) -> None:
    recipe, host = recipe_host(tmp_path, ("cublas",), "CUDA_HOME", contract="warn")
    [finding] = check_cuda_complete(recipe, host)
    assert finding.severity is Severity.WARNING


def test_a_complete_home_is_preferred_unless_cuda_home_names_one(tmp_path: Path) -> None:
    partial = CudaToolkit("11.8.89", tmp_path / "a", tmp_path / "a/bin/nvcc", "/usr/local/cuda-11.8", ("cublas",))
    whole = CudaToolkit("11.8.89", tmp_path / "b", tmp_path / "b/bin/nvcc", "srcbuild toolchain cuda-11.8-debian")
    assert HostFacts(cuda_toolkits=(partial, whole)).cuda_toolkit("11.8") == whole
    named = dataclasses.replace(partial, source="CUDA_HOME")
    assert HostFacts(cuda_toolkits=(named, whole)).cuda_toolkit("11.8") == named
    assert HostFacts(cuda_toolkits=(partial,)).cuda_toolkit("11.8") == partial


@pytest.mark.parametrize("route", load_facts({}).debian, ids=lambda r: r.cuda)
def test_the_debian_route_pins_every_wheel_by_sha256_and_size(route) -> None:
    projects = {w.project for w in route.wheels}
    assert {"nvidia-cuda-cccl-cu11", "nvidia-cublas-cu11", "nvidia-cusparse-cu11", "nvidia-cusolver-cu11",
            "nvidia-curand-cu11", "nvidia-cufft-cu11", "nvidia-nvtx-cu11", "nvidia-cuda-nvrtc-cu11",
            "nvidia-cuda-cupti-cu11"} <= projects
    for wheel in route.wheels:
        assert len(wheel.sha256) == 64 and int(wheel.sha256, 16) >= 0 and wheel.size and wheel.version
    assert route.download_size and route.download_size > sum(w.size or 0 for w in route.wheels)
