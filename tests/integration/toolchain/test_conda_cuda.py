"""CUDA from a local ``nvidia`` conda channel (packages built from the real CUDA 11.8 files, headers
and libraries under ``targets/x86_64-linux/``), provisioned as a prefix that works as CUDA_HOME."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from srcbuild import proc
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.verify.fatbin import scan_elf
from tests.integration.toolchain.conftest import install_json, serve_channel
from tests.worlds.conda_cuda import cuda_channel_packages

KERNEL = """#include <cuda_runtime.h>
__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }
int main() { return 0; }
"""


@pytest.fixture
def nvidia_channel(tmp_path: Path, cuda118_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return serve_channel(monkeypatch, tmp_path / "nvidia", "nvidia", cuda_channel_packages(cuda118_home))


def test_conda_cuda_is_a_cuda_home_whose_nvcc_builds_for_sm_35(
    nvidia_channel: Path, gcc11: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made, prefix = install_json(capsys, "cuda", "11.8", "--from", "conda")
    assert prefix.name == "cuda-11.8-conda"
    assert made["facts"]["nvcc"] == "11.8.89"
    installed = {Path(s["url"]).name.rsplit("-", 2)[0] for s in made["sources"]}
    assert installed == {
        "cuda-nvcc", "cuda-cudart-dev", "cuda-libraries-dev", "cuda-nvtx", "cuda-cupti", "cuda-cuobjdump"
    }  # fmt: skip
    # conda's layout answers where torch's build looks: CUDA_HOME/include and CUDA_HOME/lib64
    assert (prefix / "include" / "cuda_runtime.h").resolve().is_relative_to(prefix / "targets" / "x86_64-linux")
    assert (prefix / "lib64" / "libcudart.so").exists()

    (tmp_path / "k.cu").write_text(KERNEL)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no other nvcc on PATH
    assert shutil.which("nvcc", path=env["PATH"]) is None
    argv = [str(prefix / "bin" / "nvcc"), "-ccbin", str(gcc11.with_name("g++-11")), "-c", "k.cu", "-o", "k.o"]
    argv += ["-gencode", "arch=compute_35,code=sm_35", "-Wno-deprecated-gpu-targets"]
    result = proc.run(argv, cwd=tmp_path, env=env)
    assert result.ok, result.tail
    assert {e.sm for e in scan_elf(tmp_path / "k.o") if e.kind == "sass"} == {35}

    assert main(["toolchain", "install", "cuda", "11.8", "--from", "conda", "--json"]) == 0
    [again] = json.loads(capsys.readouterr().out)
    assert again["prefix"] == made["prefix"] and again.get("reused") is True


def test_offline_fetches_nothing_from_a_conda_channel(nvidia_channel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "conda", "--offline"]) == 4
    err = capsys.readouterr().err
    assert "error: CUDA 11.8 is not provisioned and --offline forbids fetching it from nvidia: cuda-nvcc 11.8.*" in err
    assert not (Paths.resolve(environ=os.environ).toolchain_dir / "cuda-11.8-conda").exists()
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "conda"]) == 0
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "conda", "--offline"]) == 0  # reuse is fine
