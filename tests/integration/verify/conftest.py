"""Real device code for verification tests: tiny .cu/.c files compiled once per session.

CUDA 11.8 nvcc (with g++-11) builds Kepler/Maxwell SASS and PTX, the CUDA 13 nvcc builds Turing
and Ampere, mpicc builds a library that links Open MPI's libmpi.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CU = FIXTURES / "cuda" / "axpy.cu"
MPI_C = FIXTURES / "cuda" / "mpi_probe.c"
TORCH_CPU = "torch==2.13.0+cpu"
SHARED = ["-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-cudadevrt", "none"]


def gencode(arch: str, code: str) -> list[str]:
    return ["-gencode", f"arch={arch},code={code}"]


def compile_so(nvcc: Path, out: Path, codes: list[list[str]], extra: Sequence[str] = ()) -> Path:
    argv = [str(nvcc), *extra, *SHARED, *(flag for c in codes for flag in c), str(CU), "-o", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("device-code")


@pytest.fixture(scope="session")
def lib118(cuda118_home: Path, gcc11: Path, built: Path) -> Path:
    """SASS sm_35, sm_37, sm_50 and PTX compute_50, from CUDA 11.8."""
    codes = [
        gencode("compute_35", "sm_35"),
        gencode("compute_37", "sm_37"),
        gencode("compute_50", "sm_50"),
        gencode("compute_50", "compute_50"),
    ]
    extra = ["-ccbin", "g++-11", "-Wno-deprecated-gpu-targets"]
    return compile_so(cuda118_home / "bin" / "nvcc", built / "libk118.so", codes, extra)


@pytest.fixture(scope="session")
def lib118_ptx(cuda118_home: Path, gcc11: Path, built: Path) -> Path:
    """PTX compute_50 only, from CUDA 11.8."""
    extra = ["-ccbin", "g++-11", "-Wno-deprecated-gpu-targets"]
    return compile_so(
        cuda118_home / "bin" / "nvcc", built / "libk118ptx.so", [gencode("compute_50", "compute_50")], extra
    )


@pytest.fixture(scope="session")
def lib13(cuda13_home: Path, built: Path) -> Path:
    """SASS sm_75, sm_80 and PTX compute_80, from CUDA 13."""
    codes = [gencode("compute_75", "sm_75"), gencode("compute_80", "sm_80"), gencode("compute_80", "compute_80")]
    return compile_so(cuda13_home / "bin" / "nvcc", built / "libk13.so", codes)


@pytest.fixture(scope="session")
def libmpi_user(mpicc: Path, built: Path) -> Path:
    """A shared library linked with mpicc: DT_NEEDED has libmpi.so.40 (Open MPI)."""
    out = built / "libtorch_mpi_stub.so"
    done = subprocess.run(
        [str(mpicc), "-shared", "-fPIC", str(MPI_C), "-o", str(out)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="session")
def cuobjdump118(cuda118_home: Path) -> Path:
    return cuda118_home / "bin" / "cuobjdump"


@pytest.fixture(scope="session")
def torch_cpu_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The official torch 2.13.0+cpu wheel (about 190 MB), downloaded once per session."""
    out = tmp_path_factory.mktemp("torch-wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(out), TORCH_CPU],
        capture_output=True,
        text=True,
        check=False,
    )
    wheels = list(out.glob("torch-*.whl"))
    if done.returncode != 0 or not wheels:
        pytest.skip(f"cannot download {TORCH_CPU}: {done.stderr.strip()[-300:]}")
    return wheels[0]
