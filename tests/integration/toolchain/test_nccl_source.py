"""NCCL built from source for exactly the recipe's archs, through NCCL's own make interface
(`make src.build NVCC_GENCODE=... BUILDDIR=...`) on a small stand-in source tree, checked with
srcbuild's fat-binary reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild import proc
from srcbuild.cli import main
from srcbuild.host.toolchain import header_version
from srcbuild.paths import Paths
from srcbuild.verify.fatbin import scan_elf

MAKEFILE = """CUDA_HOME ?= /usr/local/cuda
NVCC_GENCODE ?= -gencode=arch=compute_70,code=sm_70
BUILDDIR ?= $(abspath ./build)
CXX ?= g++

src.build:
\tmkdir -p $(BUILDDIR)/include $(BUILDDIR)/lib
\tcp src/nccl.h $(BUILDDIR)/include/nccl.h
\t$(CUDA_HOME)/bin/nvcc -ccbin $(CXX) $(NVCC_GENCODE) -Wno-deprecated-gpu-targets -Xcompiler -fPIC -shared \\
\t  -cudart shared -cudadevrt none src/all_reduce.cu -o $(BUILDDIR)/lib/libnccl.so.2.9.9
\tln -sf libnccl.so.2.9.9 $(BUILDDIR)/lib/libnccl.so.2
\tln -sf libnccl.so.2 $(BUILDDIR)/lib/libnccl.so
"""
HEADER = "#define NCCL_MAJOR 2\n#define NCCL_MINOR 9\n#define NCCL_PATCH 9\nint ncclAllReduceStandIn(float *, int);\n"
KERNEL = """__global__ void sum(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] += x[i]; }
extern "C" int ncclAllReduceStandIn(float *x, int n) { sum<<<1, 32>>>(x, n); return 0; }
"""


def _git(cwd: Path, *args: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    assert proc.run(["git", *args], cwd=cwd, env=env).ok, args


@pytest.fixture
def nccl_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cuda118_home: Path, gcc11: Path) -> Path:
    repo = tmp_path / "nccl"
    (repo / "src").mkdir(parents=True)
    (repo / "Makefile").write_text(MAKEFILE)
    (repo / "src" / "nccl.h").write_text(HEADER)
    (repo / "src" / "all_reduce.cu").write_text(KERNEL)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "nccl stand-in")
    _git(repo, "tag", "v2.9.9-1")
    data = tmp_path / "data"
    data.mkdir()
    (data / "nccl.toml").write_text(
        f'[[nccl]]\ntag = "v2.9.9-1"\nrepo = "{repo.as_uri()}"\nlowest_cc = "3.0"\nsource = "test"\n'
    )
    monkeypatch.setenv("SRCBUILD_TOOLCHAIN_DATA", str(data))
    monkeypatch.setenv("CUDA_HOME", str(cuda118_home))
    monkeypatch.setenv("CXX", "g++-11")
    return repo


def test_nccl_is_built_for_exactly_the_recipe_archs(nccl_repo: Path) -> None:
    args = ["toolchain", "install", "nccl", "2.9.9", "--cuda", "11.8", "--arch", "3.5", "--arch", "3.7"]
    assert main(args) == 0
    prefix = Paths.resolve(environ=os.environ).toolchain_dir / "nccl-2.9.9-sm35+37-source"
    assert header_version(prefix / "include" / "nccl.h", "NCCL_", "PATCH") == "2.9.9"
    entries = scan_elf(prefix / "lib" / "libnccl.so.2.9.9")
    assert {e.sm for e in entries if e.kind == "sass"} == {35, 37}
    assert (prefix / "lib" / "libnccl.so").resolve().name == "libnccl.so.2.9.9"
    assert not (nccl_repo / "build").exists()  # the build never writes into the source tree
