"""Fixtures for the sources integration tests: git isolated from the user's config, generated worlds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.worlds.gitworld import ISOLATED_GIT_ENV, World, make_world


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's or the system's git config."""
    require_tool("git", shutil.which("git"))
    for name, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("GIT_ALLOW_PROTOCOL", "GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_PARAMETERS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """The full torch-shaped world: 36 submodules plus 5 nested ones, three tags."""
    return make_world(tmp_path_factory.mktemp("world") / "github", size=4096, commits=2)


@pytest.fixture(scope="module")
def small_world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """Six submodules (fbgemm and tensorpipe nested, flatbuffers over SSH, gloo without .git)."""
    return make_world(tmp_path_factory.mktemp("small") / "github", n_submodules=6, size=2048, commits=2)


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    return tmp_path
