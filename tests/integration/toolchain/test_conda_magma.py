"""MAGMA from a local ``pytorch`` conda channel (a magma-cuda118 built by the test), provisioned into a
prefix of its own that torch's FindMAGMA lookup finds through MAGMA_HOME (checked with real CMake)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from srcbuild import proc
from srcbuild.cli import main
from tests.conftest import require_tool
from tests.integration.toolchain.conftest import install_json, serve_channel
from tests.worlds.conda_cuda import magma_package

# The lookup of pytorch/pytorch:cmake/Modules/FindMAGMA.cmake, in a project of its own.
FIND_MAGMA = """cmake_minimum_required(VERSION 3.10)
project(findmagma NONE)
find_library(MAGMA_LIBRARIES magma HINTS $ENV{MAGMA_HOME} /usr/local/magma PATH_SUFFIXES lib)
find_path(MAGMA_INCLUDE_DIR magma.h HINTS $ENV{MAGMA_HOME} /usr/local/magma PATH_SUFFIXES include)
message(STATUS "MAGMA_LIBRARIES=${MAGMA_LIBRARIES}")
message(STATUS "MAGMA_INCLUDE_DIR=${MAGMA_INCLUDE_DIR}")
"""


@pytest.fixture
def pytorch_channel(tmp_path: Path, gcc11: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    packages = [magma_package("11.8", tmp_path / "magma-src", str(gcc11))]
    return serve_channel(monkeypatch, tmp_path / "pytorch", "pytorch", packages)


def test_magma_is_provisioned_and_found_through_magma_home(
    pytorch_channel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_tool("cmake", shutil.which("cmake"))
    made, prefix = install_json(capsys, "magma", "11.8", "--from", "conda")
    assert prefix.name == "magma-cuda11.8-conda"
    assert (made["name"], made["version"], made["facts"]) == ("magma", "cuda11.8", {"magma_lib": "lib/libmagma.so"})
    assert [Path(s["url"]).name for s in made["sources"]] == ["magma-cuda118-2.6.1-1.tar.bz2"]

    project = tmp_path / "findmagma"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(FIND_MAGMA)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MAGMA_HOME": str(prefix)}
    configured = proc.run(["cmake", "-S", str(project), "-B", str(project / "build")], env=env)
    assert configured.ok, configured.tail
    out = "\n".join(configured.tail)
    assert f"MAGMA_LIBRARIES={prefix}/lib/libmagma.so" in out
    assert f"MAGMA_INCLUDE_DIR={prefix}/include" in out
    assert main(["toolchain", "rm", "magma", "11.8"]) == 0  # named as it was installed
    assert f"removed {prefix}" in capsys.readouterr().out and not prefix.exists()
