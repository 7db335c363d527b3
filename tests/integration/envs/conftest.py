"""Fixtures for environment tests: local conda channels and recipe files that use them."""

from __future__ import annotations

import base64
import hashlib
import shutil
import zipfile
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


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(directory: Path, name: str = "srcbuild_demo_greet", version: str = "1.0") -> Path:
    """A minimal pure-Python wheel, written by hand (no build backend, no network)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"GREETING = 'hello from {name} {version}'\n".encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: srcbuild-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
    return path


@pytest.fixture
def offline_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees only a local wheel directory: no index, no user or site configuration."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels
