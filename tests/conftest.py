"""Shared test fixtures: isolated srcbuild paths and access to the real tools CI installs.

A test that needs a real tool (gcc-11, the CUDA 11.8 toolkit, Open MPI) asks for it through
``require_tool``/the fixtures below: on a developer machine without it the test is skipped, in
CI (``SRCBUILD_REQUIRE_TOOLS=1``) a missing tool fails the test instead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def require_tool(what: str, found: object) -> None:
    """Skip (locally) or fail (in CI) when a real tool a test needs is missing."""
    if found:
        return
    message = f"{what} is not installed here (tests/setup.sh installs it)"
    if os.environ.get("SRCBUILD_REQUIRE_TOOLS") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own work dir and cache dir; no test touches the user's."""
    base = tmp_path_factory.mktemp("srcbuild")
    monkeypatch.setenv("SRCBUILD_WORK_DIR", str(base / "work"))
    monkeypatch.setenv("SRCBUILD_CACHE_DIR", str(base / "cache"))
    monkeypatch.delenv("SRCBUILD_RECIPES_PATH", raising=False)
    monkeypatch.delenv("SRCBUILD_MIRROR", raising=False)
    return base


@pytest.fixture(scope="session")
def cuda118_home() -> Path:
    """A CUDA 11.8 toolkit (nvcc, cuobjdump) assembled by .ci/cuda118.sh."""
    home = Path(os.environ.get("SRCBUILD_TEST_CUDA118", Path.home() / ".cache/srcbuild-ci/cuda-11.8"))
    if not (home / "bin" / "nvcc").exists() and Path("/opt/srcbuild-ci/cuda-11.8/bin/nvcc").exists():
        home = Path("/opt/srcbuild-ci/cuda-11.8")
    require_tool("the CUDA 11.8 toolkit", (home / "bin" / "nvcc").exists())
    return home


@pytest.fixture(scope="session")
def cuda13_home() -> Path:
    """The machine's CUDA 13 toolkit (sm_75 and newer)."""
    nvcc = shutil.which("nvcc")
    home = Path("/usr/local/cuda")
    require_tool("a CUDA 13 nvcc", nvcc or (home / "bin" / "nvcc").exists())
    return home if (home / "bin" / "nvcc").exists() else Path(nvcc).resolve().parent.parent  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def gcc11() -> Path:
    path = shutil.which("gcc-11")
    require_tool("gcc-11", path)
    return Path(path)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def mpicc() -> Path:
    path = shutil.which("mpicc")
    require_tool("Open MPI (mpicc)", path)
    return Path(path)  # type: ignore[arg-type]
