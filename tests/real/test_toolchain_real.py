"""The provisioned toolchain on real upstream artifacts: a CUDA extension written here (ATen's
CUDA context, thrust, cub and cuBLAS) built with torch.utils.cpp_extension against the real torch
2.0.1+cu117 wheel, the provisioned CUDA 11.8 (Debian route: Debian's packages plus NVIDIA's
component wheels) and gcc 11 for compute capability 3.5 and 3.7; cuDNN 8.5 and NCCL 2.14 from the
package index, found the way torch's CMake looks for them and their kernels read; cuDNN 9.1
refused for a 3.7 recipe from what its libraries hold; cuDNN 9.10 for CUDA 12 (the cu126 recipes'
pin) provisioned from its wheel for Pascal, its kernels as pypi.toml states them.

The toolchains live in SRCBUILD_TOOLCHAIN_DIR (tests/setup.sh: ~/.cache/srcbuild-ci/toolchains),
kept between runs, so a second run downloads nothing. One build serves every assertion about it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from srcbuild.host.toolchain import missing_components
from srcbuild.toolchain.data_files import load_facts
from tests.conftest import require_tool
from tests.real.artifacts import CUDNN_CU12_910, TORCH_201_CU117, fetch

# one worker builds the extension and provisions cuDNN/NCCL once (session fixtures are per worker)
pytestmark = [pytest.mark.real, pytest.mark.integration, pytest.mark.xdist_group("toolchain-real")]

TORCH_DEPS = ("filelock", "typing-extensions", "sympy", "networkx", "jinja2", "setuptools", "wheel")
# libtorch_cuda.so of the cu117 wheel links libcupti.so.11.7, a soname no CUDA 11.8 home has: torch's
# own pin of it (11.8 MB) is installed beside torch; every other library comes from the provisioned ones
CUPTI_117 = "nvidia-cuda-cupti-cu11==11.7.101"

EXTENSION = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <thrust/sort.h>
#include <thrust/execution_policy.h>
#include <cub/cub.cuh>
#include <cublas_v2.h>
#include <library_types.h>

__global__ void block_sum(const float* in, float* out, int n) {
  using Reduce = cub::BlockReduce<float, 128>;
  __shared__ typename Reduce::TempStorage scratch;
  int i = blockIdx.x * 128 + threadIdx.x;
  float total = Reduce(scratch).Sum(i < n ? in[i] : 0.f);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

torch::Tensor sorted_sum(torch::Tensor x) {
  auto sorted = x.clone();
  thrust::sort(thrust::device, sorted.data_ptr<float>(), sorted.data_ptr<float>() + sorted.numel());
  auto out = torch::zeros({(sorted.numel() + 127) / 128}, x.options());
  block_sum<<<out.numel(), 128, 0, at::cuda::getCurrentCUDAStream()>>>(
      sorted.data_ptr<float>(), out.data_ptr<float>(), sorted.numel());
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
  float result = 0.f;
  cublasSasum(handle, out.numel(), out.data_ptr<float>(), 1, &result);
  return torch::full({}, result);
}

int cublas_major() {  // a host call into cuBLAS that needs no GPU
  int major = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  return major;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("sorted_sum", &sorted_sum);
  m.def("cublas_major", &cublas_major);
}
"""

SETUP = """
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="kepler_probe",
    version="0.1",
    ext_modules=[CUDAExtension("kepler_probe", ["kepler_probe.cu"],
                               extra_compile_args={{"cxx": [], "nvcc": ["-ccbin", "{gcc}"]}},
                               libraries=["cublas"])],
    cmdclass={{"build_ext": BuildExtension}},
)
"""

FIND_CUDNN = """
cmake_minimum_required(VERSION 3.18)
project(find_cudnn NONE)
list(APPEND CMAKE_MODULE_PATH "{modules}")
find_package(CUDNN REQUIRED)
message(STATUS "cuDNN ${{CUDNN_VERSION}} include ${{CUDNN_INCLUDE_PATH}} library ${{CUDNN_LIBRARY_PATH}}")
"""


@dataclass
class Ran:
    rc: int
    out: str  # stdout and stderr
    seconds: float
    stdout: str


def run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Ran:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env or dict(os.environ), cwd=cwd, check=False)
    ran = Ran(done.returncode, done.stdout + done.stderr, time.monotonic() - started, done.stdout)
    print(f"{' '.join(Path(a).name if '/' in a else a for a in argv[:4])}: {ran.seconds:.0f} s (exit {ran.rc})")
    return ran


def srcbuild(*argv: str, env: dict[str, str] | None = None) -> Ran:
    return run([sys.executable, "-m", "srcbuild", *argv], env=env)


@pytest.fixture(scope="session")
def cuda_home(cuda118_home: Path) -> Path:
    missing = missing_components(cuda118_home, "11.8")
    require_tool(
        f"a complete CUDA 11.8 home at {cuda118_home} (lacks {', '.join(missing)}; "
        "srcbuild toolchain install cuda 11.8 --from debian completes it)",
        not missing,
    )
    return cuda118_home


def installed(*argv: str) -> dict[str, object]:
    """``srcbuild toolchain install ARGV --json``: the one toolchain it reports."""
    ran = srcbuild("toolchain", "install", *argv, "--json")
    assert ran.rc == 0, ran.out[-3000:]
    [entry] = json.loads(ran.stdout)
    return entry


@pytest.fixture(scope="session")
def cudnn85() -> dict[str, object]:
    return installed("cudnn", "8.5", "--cuda", "11.8", "--arch", "3.5", "--arch", "3.7", "--from", "pypi")


@pytest.fixture(scope="session")
def nccl214() -> dict[str, object]:
    return installed("nccl", "2.14", "--cuda", "11.8", "--arch", "5.0", "--arch", "6.1", "--from", "pypi")


@pytest.fixture(scope="session")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prefix = tmp_path_factory.mktemp("torch201") / "venv"
    assert run([sys.executable, "-m", "venv", str(prefix)]).rc == 0
    pip = [str(prefix / "bin" / "python"), "-m", "pip", "install", "-q"]
    no_cap = {**os.environ, "PIP_CONSTRAINT": ""}
    # torch's own cu11 library wheels are left out: the provisioned home and prefixes serve them
    ran = run([*pip, "--no-deps", str(fetch(TORCH_201_CU117))], env=no_cap)
    assert ran.rc == 0, ran.out[-3000:]
    ran = run([*pip, *TORCH_DEPS, CUPTI_117], env=no_cap)
    assert ran.rc == 0, ran.out[-3000:]
    return prefix


def library_path(venv: Path, cuda_home: Path, *prefixes: dict[str, object]) -> str:
    cupti = next(venv.glob("lib/python3*/site-packages/nvidia/cuda_cupti/lib"))
    homes = [str(cuda_home / "lib"), *(str(Path(str(p["prefix"])) / "lib64") for p in prefixes)]
    return os.pathsep.join([*homes, str(cupti)])


@pytest.fixture(scope="session")
def extension(
    tmp_path_factory: pytest.TempPathFactory,
    venv: Path,
    cuda_home: Path,
    gcc11: Path,
    cudnn85: dict[str, object],
    nccl214: dict[str, object],
) -> Path:
    """The extension's wheel, built once for 3.5 and 3.7 (one nvcc call with both archs); the build
    imports torch, whose libraries come from the provisioned home and prefixes."""
    src = tmp_path_factory.mktemp("kepler_probe")
    (src / "kepler_probe.cu").write_text(EXTENSION)
    (src / "setup.py").write_text(SETUP.format(gcc=gcc11))
    gxx = shutil.which("g++-11")
    require_tool("g++-11", gxx)
    env = {
        **os.environ,
        "CUDA_HOME": str(cuda_home),
        "TORCH_CUDA_ARCH_LIST": "3.5;3.7",
        "CC": str(gcc11),
        "CXX": str(gxx),
        "MAX_JOBS": "2",
        "LD_LIBRARY_PATH": library_path(venv, cuda_home, cudnn85, nccl214),
    }
    python = str(venv / "bin" / "python")
    ran = run([python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(src / "dist"),
               str(src)], env=env)
    assert ran.rc == 0, ran.out[-6000:]
    [wheel] = (src / "dist").glob("kepler_probe-0.1-*.whl")
    return wheel


def test_the_home_is_complete_and_compiles_torchs_cuda_headers(extension: Path) -> None:
    with zipfile.ZipFile(extension) as zf:
        assert any(n.startswith("kepler_probe") and n.endswith(".so") for n in zf.namelist())


def test_verify_finds_sass_for_35_and_37(extension: Path, cuda_home: Path) -> None:
    ran = srcbuild("verify", str(extension), "--arch", "3.5", "--arch", "3.7", "--cuda-home", str(cuda_home),
                   "--no-host-mpi", "--json")
    assert ran.rc == 0, ran.out[-3000:]
    report = json.loads(ran.stdout)
    [library] = report["libraries"]
    assert library["library"].startswith("kepler_probe") and {"3.5", "3.7"} <= set(library["sass"]), library
    assert {c["cc"]: c["via"] for c in report["coverage"]} == {"3.5": "SASS sm_35", "3.7": "SASS sm_37"}


def test_it_imports_next_to_torch_with_the_provisioned_libraries(
    extension: Path, venv: Path, cuda_home: Path, cudnn85: dict[str, object], nccl214: dict[str, object]
) -> None:
    python = str(venv / "bin" / "python")
    ran = run([python, "-m", "pip", "install", "-q", "--no-deps", str(extension)])
    assert ran.rc == 0, ran.out
    env = {**os.environ, "LD_LIBRARY_PATH": library_path(venv, cuda_home, cudnn85, nccl214)}
    code = ("import torch, kepler_probe; print(torch.__version__, torch.version.cuda, "
            "torch.backends.cudnn.version(), kepler_probe.cublas_major())")
    ran = run([python, "-c", code], env=env, cwd=venv)
    assert ran.rc == 0, ran.out[-3000:]
    assert ran.out.split()[-4:] == ["2.0.1+cu117", "11.7", "8500", "11"]


def test_cudnn85_is_found_the_way_torchs_cmake_looks(cudnn85: dict[str, object], tmp_path: Path) -> None:
    prefix = Path(str(cudnn85["prefix"]))
    with zipfile.ZipFile(fetch(TORCH_201_CU117)) as zf:
        module = zf.read("torch/share/cmake/Caffe2/Modules_CUDA_fix/FindCUDNN.cmake")
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "FindCUDNN.cmake").write_bytes(module)
    (tmp_path / "CMakeLists.txt").write_text(FIND_CUDNN.format(modules=tmp_path / "modules"))
    require_tool("cmake", shutil.which("cmake"))
    env = {**os.environ, "CUDNN_INCLUDE_DIR": str(prefix / "include"), "CUDNN_LIBRARY": str(prefix / "lib64")}
    ran = run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "build")], env=env)
    assert ran.rc == 0, ran.out
    assert f"cuDNN 8.5.0 include {prefix}/include library {prefix}/lib64/libcudnn.so" in ran.out


def test_cudnn85_kernels_are_read_and_recorded(cudnn85: dict[str, object]) -> None:
    facts = cudnn85["facts"]
    assert isinstance(facts, dict)
    assert facts["sass"].split(",")[:2] == ["3.5", "5.0"] and facts["cudnn"] == "8.5.0"
    assert "libcudnn_cnn_infer.so.8" in facts["kernel_libraries"]
    where = str(Path(str(cudnn85["prefix"])).parent)
    ran = srcbuild("toolchain", "ls", env={**os.environ, "SRCBUILD_TOOLCHAIN_DIR": where})
    assert "cudnn 8.5.0.96-cuda11 (pypi) kernels: SASS 3.5, 5.0," in ran.out


def test_cudnn91_is_refused_for_37_from_its_libraries() -> None:
    ran = srcbuild("toolchain", "install", "cudnn", "9.1", "--cuda", "11.8", "--arch", "3.7", "--from", "pypi")
    assert ran.rc == 3, ran.out[-3000:]
    assert "cuDNN 9.1.0 in " in ran.out and "has no kernel for compute capability 3.7" in ran.out
    assert "libcudnn_cnn.so.9" in ran.out and "hold SASS 5.0, 6.0, 6.1, 7.0, 7.5, 8.0, 8.6 and 9.0" in ran.out
    assert "cuDNN 8.5.0.96 (srcbuild's data) covers 3.7" in ran.out
    assert 'pin cudnn = "8.5"' in ran.out


def test_nccl_from_the_index_for_a_maxwell_pascal_recipe(nccl214: dict[str, object]) -> None:
    facts = nccl214["facts"]
    assert isinstance(facts, dict)
    assert nccl214["provider"] == "pypi" and facts["nccl"] == "2.14.3"
    assert {"5.0", "6.1"} <= set(facts["sass"].split(",")) and facts["kernel_libraries"] == "libnccl.so.2"
    prefix = Path(str(nccl214["prefix"]))
    assert (prefix / "include" / "nccl.h").is_file() and (prefix / "lib64" / "libnccl.so").exists()


def test_cudnn910_for_cuda_12_from_its_wheel_runs_on_pascal() -> None:
    """The cu126 recipes' cuDNN from the package index: pip takes the shared cache's copy of the
    wheel through find-links with no index (the same ``pip download --require-hashes`` a site's
    mirror of the index serves), so the 707 MB file is downloaded once for every test."""
    wheel = fetch(CUDNN_CU12_910)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheel.parent)}
    ran = srcbuild("toolchain", "install", "cudnn", "9.10", "--cuda", "12.6", "--arch", "6.0", "--arch", "6.1",
                   "--from", "pypi", "--json", env=env)
    assert ran.rc == 0, ran.out[-3000:]
    [entry] = json.loads(ran.stdout)
    prefix = Path(str(entry["prefix"]))
    try:
        facts = entry["facts"]
        assert isinstance(facts, dict)
        assert (entry["provider"], entry["version"]) == ("pypi", "9.10.2.21-cuda12")
        assert (facts["cudnn"], facts["cuda"]) == ("9.10.2", "12")
        version_h = (prefix / "include" / "cudnn_version.h").read_text()
        for line in ("#define CUDNN_MAJOR 9", "#define CUDNN_MINOR 10", "#define CUDNN_PATCHLEVEL 2"):
            assert line in version_h
        assert (prefix / "lib64" / "libcudnn.so").resolve() == prefix / "lib64" / "libcudnn.so.9"
        row = load_facts({}).index_wheel_for("cudnn", "9.10", "12.6")  # the data agrees with the binary
        assert row is not None
        assert (facts["sass"].split(","), facts["ptx"].split(",")) == (list(row.sass), list(row.ptx))
        assert "libcudnn_ops.so.9" in facts["kernel_libraries"]
        refused = srcbuild("toolchain", "install", "cudnn", "9.10", "--cuda", "12.6", "--arch", "3.7", "--from", "pypi")
        assert refused.rc == 3 and "has no kernel for compute capability 3.7" in refused.out, refused.out[-3000:]
    finally:
        shutil.rmtree(prefix, ignore_errors=True)  # 1 GB: not kept in the test's temporary directory
