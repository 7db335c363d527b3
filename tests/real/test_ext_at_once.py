"""srcbuild's ``build_ext_at_once.py.in`` for real: a package of four extensions (three with a CUDA
file and a C++ file, one C++ only) built by torch 2.0.1+cu117's own ``BuildExtension`` with CUDA
11.8's nvcc for sm_37, gcc 11, ninja 1.13 from the index and ``MAX_JOBS=2``, its setup.py edited
and prefixed by the parallel step's own unpack script.

What it shows: the extensions build through one jobserver of two tokens, every CUDA file before any
extension's C++ files (the extension that compiles its CUDA file first hands its token to the third
CUDA extension, the C++-only one starts last), each in a build directory of its own, each CUDA
library with SASS sm_37; and when one extension's CUDA file does not compile, nvcc's error is in
the log and the extensions not yet started are never started.

The environment holds torch 2.0.1 (no dependencies from the index), the cuDNN, NCCL and CUPTI
wheels its libraries load, and CUDA 11.8's own libraries (cuBLAS, cuFFT, ...) through
LD_LIBRARY_PATH: enough to import torch.utils.cpp_extension, with no GPU. The kernels are a few
lines each (no torch headers in the CUDA files), so the builds take seconds; what takes time is
setting up the environment (about 40 CPU seconds, once per session).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from srcbuild.ext.knowledge import SourceEdit
from srcbuild.ext.plan import unpack_argv
from srcbuild.verify.fatbin import count_entries
from tests.conftest import require_tool
from tests.real.artifacts import (
    CUDNN_CU11_85,
    CUPTI_CU11_117,
    NCCL_CU11_2143,
    TORCH_201_CU117,
    fetch,
    sha256_of,
)

pytestmark = [pytest.mark.real, pytest.mark.integration, pytest.mark.xdist_group("ext-at-once")]

EDIT = SourceEdit(file="setup.py", old="use_ninja=False", new="use_ninja=True", source="this test",
                  prepend="build_ext_at_once.py.in")
KERNEL = """__global__ void k_{n}(float* x, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2;
}}
extern "C" void launch_{n}(float* x, int n) {{ k_{n}<<<(n + 255) / 256, 256>>>(x, n); }}
"""
CALLER = """extern "C" void launch_{n}(float* x, int n);
extern "C" int uses_{n}() {{ return launch_{n} != nullptr; }}
"""
SETUP = """from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

flags = {{"cxx": ["-O1"], "nvcc": ["-O1"]}}
setup(
    name="four",
    version="1.0",
    ext_modules=[
        CppExtension("four._v", ["src/v.cpp"], extra_compile_args=flags),
{cuda}
    ],
    cmdclass={{"build_ext": BuildExtension.with_options(use_ninja=False)}},
)
"""


@pytest.fixture(scope="session")
def torch_env(tmp_path_factory: pytest.TempPathFactory, cuda118_home: Path) -> dict[str, str]:
    """The environment variables of a build against torch 2.0.1 in a venv made here."""
    gcc = shutil.which("gcc-11")
    require_tool("gcc-11", gcc)
    prefix = tmp_path_factory.mktemp("at-once") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(prefix)], check=True)
    python = str(prefix / "bin" / "python")
    wheels = [str(fetch(a)) for a in (TORCH_201_CU117, CUDNN_CU11_85, NCCL_CU11_2143, CUPTI_CU11_117)]
    pip = [python, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", *wheels], check=True, env={**os.environ, "PIP_CONSTRAINT": ""})
    # torch 2.0.1's own Python dependencies (its NVIDIA and triton ones left out), the build's tools
    needs = ["filelock", "typing-extensions", "sympy", "networkx", "jinja2", "setuptools", "wheel", "ninja>=1.13"]
    subprocess.run([*pip, *needs], check=True, env={**os.environ, "PIP_CONSTRAINT": ""})
    return {
        **os.environ,
        "PATH": f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "LD_LIBRARY_PATH": str(cuda118_home / "lib64"),
        "CUDA_HOME": str(cuda118_home),
        "CC": "gcc-11",
        "CXX": "g++-11",
        "TORCH_CUDA_ARCH_LIST": "3.7",
        "MAX_JOBS": "2",
        "PYTHON": python,
    }


def sdist(at: Path, broken: str = "") -> Path:
    """The four-extension package as an sdist; ``broken`` names the extension whose CUDA file fails."""
    files: dict[str, str] = {"src/v.cpp": 'extern "C" int version() { return 1; }\n'}
    lines = []
    for n in ("a", "b", "c"):
        kernel = KERNEL.format(n=n)
        if n == broken:
            kernel += "int oops() { return undeclared_name; }\n"
        # a's files are the largest, so a ranks first among the CUDA extensions, then b, then c
        files[f"src/k_{n}.cu"] = kernel + "//" * {"a": 300, "b": 200, "c": 100}[n] + "\n"
        files[f"src/m_{n}.cpp"] = CALLER.format(n=n)
        lines.append(f'        CppExtension("four._{n}", ["src/m_{n}.cpp", "src/k_{n}.cu"], extra_compile_args=flags),')
    files["setup.py"] = SETUP.format(cuda="\n".join(lines))
    path = at / "four-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"four-1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def build(at: Path, env: dict[str, str], broken: str = "") -> tuple[subprocess.CompletedProcess[str], Path]:
    package = sdist(at, broken)
    unpacked = at / "src"
    done = subprocess.run(unpack_argv(env["PYTHON"], str(package), sha256_of(package), str(unpacked), EDIT),
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    top = unpacked / "four-1.0"
    ran = subprocess.run([env["PYTHON"], "setup.py", "build_ext", "-b", str(at / "out"), "-t", str(at / "tmp")],
                         cwd=top, env=env, capture_output=True, text=True, check=False)
    return ran, at


def said(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("srcbuild: ")]


def test_every_cuda_file_compiles_before_any_cpp_file_and_each_library_holds_sm_37(
    tmp_path: Path, torch_env: dict[str, str]
) -> None:
    ran, at = build(tmp_path, torch_env)
    out = ran.stdout + ran.stderr
    assert ran.returncode == 0, out[-4000:]
    lines = said(out)
    assert lines[0].startswith("srcbuild: building 4 extensions side by side, 2 compiles at once through a "
                               "jobserver (ninja 1.13 or later), CUDA files first"), lines
    started = [line.split(":")[1].strip() for line in lines if line.endswith(": started")]
    assert set(started[:2]) == {"four._a", "four._b"} and started[2:] == ["four._c", "four._v"], lines
    handed = [line for line in lines if "CUDA files compiled; its other files wait" in line]
    assert len(handed) == 1 and handed[0].split(":")[1].strip() in ("four._a", "four._b"), lines
    # the handing over comes before the third CUDA extension starts
    assert lines.index(handed[0]) < lines.index("srcbuild: four._c: started"), lines
    assert "ninja: Jobserver mode detected" in out
    for n in ("a", "b", "c"):
        (library,) = (at / "out" / "four").glob(f"_{n}.*.so")
        assert ("sass", 37) in {(e.kind, e.sm) for e in count_entries(library)}, library
        objects = {p.name for p in (at / "tmp" / f"four._{n}").rglob("*.o")}
        assert objects == {f"k_{n}.o", f"m_{n}.o"}, objects  # in a directory of its own
    assert list((at / "out" / "four").glob("_v.*.so"))
    assert not (at / "tmp" / "srcbuild-jobserver").exists()


def test_a_cuda_file_that_fails_stops_the_extensions_not_started(tmp_path: Path, torch_env: dict[str, str]) -> None:
    ran, _ = build(tmp_path, torch_env, broken="a")
    out = ran.stdout + ran.stderr
    assert ran.returncode != 0, out[-4000:]
    assert re.search(r'k_a\.cu\(\d+\): error: identifier "undeclared_name" is undefined', out), out[-4000:]
    lines = said(out)
    assert "srcbuild: four._a: started" in lines, lines
    assert "srcbuild: four._v: started" not in lines, lines  # never started after a's failure
    assert not list((tmp_path / "out").rglob("_a.*.so"))
