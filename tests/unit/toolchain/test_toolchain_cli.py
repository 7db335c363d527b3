"""`srcbuild toolchain ls|rm|gc|install` text, JSON and errors (no subprocess, no network)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.toolchain.store import Provisioned, Source, ToolchainStore


def _store() -> ToolchainStore:
    return ToolchainStore(Paths.resolve(environ=os.environ).toolchain_dir)


def _provision(name: str, version: str, provider: str) -> None:
    def create(target: Path, final: Path) -> Provisioned:
        (target / "bin").mkdir()
        (target / "bin" / "tool").write_bytes(b"x" * 1500)
        return Provisioned((Source("https://developer.download.nvidia.com/a.run", "c" * 64, 1500),))

    _store().ensure(name, version, provider, create)


def test_ls_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "ls"]) == 0
    assert " ".join(capsys.readouterr().out.split()) == f"no toolchains provisioned in {_store().root}"
    _provision("cuda", "9.2", "runfile")
    _provision("cudnn", "7.6.5.32-cuda9.2", "nvidia")
    assert main(["toolchain", "ls"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [  # a table to a pipe: plain lines, no rule, no trailing blanks
        "name   version           provider  size     prefix",
        "cuda   9.2               runfile   1.5 KiB  cuda-9.2-runfile",
        "cudnn  7.6.5.32-cuda9.2  nvidia    1.5 KiB  cudnn-7.6.5.32-cuda9.2-nvidia",
    ]
    assert all(len(line) <= 80 for line in lines)
    assert main(["toolchain", "ls", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["prefix"] for t in data["toolchains"]] == [
        str(_store().root / "cuda-9.2-runfile"),
        str(_store().root / "cudnn-7.6.5.32-cuda9.2-nvidia"),
    ]


def test_rm_and_gc(capsys: pytest.CaptureFixture[str]) -> None:
    _provision("gcc", "7", "conda")
    assert main(["toolchain", "rm", "gcc", "8"]) == 2
    assert capsys.readouterr().err == (f"error: no provisioned gcc 8 in {_store().root}\nhint: srcbuild toolchain ls\n")
    assert main(["toolchain", "rm", "gcc", "7"]) == 0
    assert capsys.readouterr().out == f"removed {_store().root / 'gcc-7-conda'}\n"
    assert main(["toolchain", "gc"]) == 0
    assert capsys.readouterr().out == "freed 0 B\n"


def test_install_needs_a_tool_and_a_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install"]) == 2
    assert capsys.readouterr().err == "error: say what to provision\nhint: srcbuild toolchain install cuda 11.8\n"
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "apt"]) == 2
    assert "error: --from apt: no such provider (valid: redist, runfile, debian, pypi, nvidia, conda, source)" in (
        capsys.readouterr().err
    )
    assert main(["toolchain", "install", "cudnn", "7.6"]) == 2
    assert capsys.readouterr().err.startswith("error: cuDNN 7.6: say which CUDA it is for\n")


def test_portable_is_for_a_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install", "cuda", "11.8", "--portable"]) == 2
    assert capsys.readouterr().err == (
        "error: --portable is for --recipe\nhint: srcbuild toolchain install gcc 11 --from conda --sysroot 2.17\n"
    )


def test_a_sysroot_is_for_gcc_and_reuses_its_own_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install", "cuda", "11.8", "--sysroot", "2.17"]) == 2
    assert capsys.readouterr().err == (
        "error: --sysroot is for gcc, not cuda\nhint: srcbuild toolchain install gcc 11 --from conda --sysroot 2.17\n"
    )
    _provision("gcc", "11", "conda")  # a plain conda gcc does not serve a portable build
    _provision("gcc", "11-sysroot2.17", "conda")
    assert main(["toolchain", "install", "gcc", "11", "--sysroot", "2.17", "--json"]) == 0
    [made] = json.loads(capsys.readouterr().out)
    assert (made["version"], made["reused"]) == ("11-sysroot2.17", True)
    assert made["prefix"].endswith("/gcc-11-sysroot2.17-conda")
