"""gcc from a local conda channel (a compiler package built around the host's gcc-11), selected
through the private update-alternatives tree and used to build CUDA code with no gcc-11 on PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from srcbuild import proc
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.plan.compiler import selection_commands
from srcbuild.resolve.compiler import private_tree
from srcbuild.verify.fatbin import scan_elf
from tests.conftest import require_tool
from tests.integration.toolchain.conftest import install_json, serve_channel
from tests.worlds.conda_compiler import host_gcc_packages, standin_sysroot_package

KERNEL = "__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\nint main() { return 0; }\n"


@pytest.fixture
def compiler_channel(tmp_path: Path, gcc11: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    require_tool("update-alternatives", shutil.which("update-alternatives"))
    return serve_channel(monkeypatch, tmp_path / "conda-forge", "conda-forge", host_gcc_packages())


def test_conda_gcc_is_provisioned_selected_privately_and_builds_cuda_code(
    compiler_channel: Path, cuda118_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made, prefix = install_json(capsys, "gcc", "11", "--from", "conda")
    assert prefix.name == "gcc-11-conda"
    assert made["facts"]["gcc_version"].startswith("11.")
    assert (prefix / "bin" / "gcc-11").resolve().name == "x86_64-conda-linux-gnu-gcc"

    tree = private_tree(tmp_path / "alternatives")
    for command in selection_commands(tree, prefix / "bin" / "gcc-11", prefix / "bin" / "g++-11", "11"):
        assert proc.run(command.argv).ok, command.argv
    assert (tree.links_dir / "g++").resolve() == (prefix / "bin" / "x86_64-conda-linux-gnu-g++").resolve()

    (tmp_path / "k.cu").write_text(KERNEL)
    env = {"PATH": str(tree.links_dir), "HOME": str(tmp_path)}  # no gcc-11, no /usr/bin on PATH
    assert not any((tree.links_dir / name).exists() for name in ("gcc-11", "g++-11"))
    argv = [str(cuda118_home / "bin" / "nvcc"), "-ccbin", str(tree.links_dir / "g++"), "-c", "k.cu", "-o", "k.o"]
    argv += ["-gencode", "arch=compute_35,code=sm_35", "-gencode", "arch=compute_37,code=sm_37"]
    argv += ["-Wno-deprecated-gpu-targets"]
    result = proc.run(argv, cwd=tmp_path, env=env)
    assert result.ok, result.tail
    assert {e.sm for e in scan_elf(tmp_path / "k.o") if e.kind == "sass"} == {35, 37}


def test_a_conda_gcc_that_ignores_its_sysroot_is_refused(
    tmp_path: Path, gcc11: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The host's gcc-11 repackaged without conda-forge's --with-sysroot behaviour: the sysroot is
    installed beside it, but the compiler would link the machine's glibc, so provisioning stops."""
    packages = [*host_gcc_packages(), standin_sysroot_package()]
    serve_channel(monkeypatch, tmp_path / "conda-forge", "conda-forge", packages)
    assert main(["toolchain", "install", "gcc", "11", "--from", "conda", "--sysroot", "2.17"]) == 5
    err = capsys.readouterr().err
    assert "builds against the sysroot /, not the x86_64-conda-linux-gnu/sysroot of its prefix" in err
    assert not (Paths.resolve(environ=os.environ).toolchain_dir / "gcc-11-sysroot2.17-conda").exists()
