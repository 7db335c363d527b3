"""Fixtures for environment tests: local conda channels and recipe files that use them."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from worlds.conda_channel import torch_build_channels

RECIPE = """\
name = "{name}"
description = "environment test recipe"

[torch]
tag = "v1.7.1"

[toolchain]
python = "{python}"
gcc = "7"
cuda = "9.2"
cudnn = "7.6"

[gpu]
arch = ["3.0"]

[env]
conda = {conda}
"""


@pytest.fixture(scope="session")
def channels_master(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("rattler")
    return torch_build_channels(tmp_path_factory.mktemp("channels"))


@pytest.fixture
def channels(channels_master: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    """A private copy of the channels (tests tamper with or hide them)."""
    out = {}
    for name, path in channels_master.items():
        out[name] = tmp_path / "channels" / name
        shutil.copytree(path, out[name])
    return out


@pytest.fixture
def mirror_args(channels: dict[str, Path]) -> list[str]:
    args = []
    for name, path in channels.items():
        args += ["--channel-mirror", f"{name}={path.as_uri()}"]
    return args


@pytest.fixture
def write_recipe(tmp_path: Path) -> Callable[..., Path]:
    def write(name: str = "demo-cu92", python: str = "3.8", conda: tuple[str, ...] = ()) -> Path:
        path = tmp_path / "recipes" / f"{name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        listed = "[" + ", ".join(f'"{c}"' for c in conda) + "]"
        path.write_text(RECIPE.format(name=name, python=python, conda=listed))
        return path

    return write
