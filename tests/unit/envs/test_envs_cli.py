"""``srcbuild env show|rm`` and ``lock`` argument handling (nothing is created or solved here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import srcbuild.envs.backends as backends
from srcbuild.cli import main
from srcbuild.envs.backends.rattler_backend import rattler_available
from srcbuild.paths import Paths


@pytest.fixture(autouse=True)
def no_conda_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("SRCBUILD_ENV_BACKEND", raising=False)
    monkeypatch.delenv("SRCBUILD_CHANNEL_ALIAS", raising=False)
    monkeypatch.delenv("SRCBUILD_CHANNEL_MIRRORS", raising=False)


requires_rattler = pytest.mark.skipif(not rattler_available(), reason="py-rattler needs Python >= 3.10")


@requires_rattler
def test_env_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    mirror = "conda-forge=https://mirror.example.edu/conda-forge"
    assert main(["env", "show", "--recipe", "kepler-cu92", "--channel-mirror", mirror, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recipe"] == "kepler-cu92"
    assert data["backend"] == "rattler"
    assert data["exists"] is False
    assert data["lockfile"] is None
    spec = data["spec"]
    assert spec["python"] == "3.8" and spec["cuda"] == "9.2"
    assert spec["channels"] == ["conda-forge"]
    assert not any(s.startswith("magma") for s in spec["conda"])  # a toolchain piece, not the environment's
    assert spec["routing"] == {"alias": None, "mirrors": {"conda-forge": "https://mirror.example.edu/conda-forge"}}
    assert data["prefix"] == str(Paths.resolve(environ=os.environ).envs_dir / spec["key"])
    assert data["steps"][0].startswith("solve 'python 3.8.*' ")
    assert data["steps"][0].endswith(" for linux-64 from https://mirror.example.edu/conda-forge")


@requires_rattler
def test_env_show_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "show", "--recipe", "kepler-cu92"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "# build environment of kepler-cu92 (torch v1.7.1, Python 3.8)"
    assert lines[2] == "channels:  conda-forge"
    assert "python 3.8.*         recipe [toolchain] python" in lines  # a table to a pipe: plain lines
    assert "lockfile:  none (the packages are solved at creation)" in lines
    assert "backend:   rattler" in lines


def test_env_rm_needs_recipe_or_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "rm"]) == 2
    assert (
        capsys.readouterr().err
        == "error: give either --recipe R or --all\nhint: srcbuild env rm --recipe kepler-cu92\n"
    )


def test_env_rm_of_a_missing_env(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "rm", "--recipe", "kepler-cu92"]) == 0
    assert capsys.readouterr().out.startswith("no environment for kepler-cu92 at ")


def test_bad_backend_from_the_environment(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SRCBUILD_ENV_BACKEND", "pixi")
    assert main(["env", "show", "--recipe", "kepler-cu92"]) == 2
    assert capsys.readouterr().err == (
        "error: unknown environment backend 'pixi'\nhint: choose one of: conda, mamba, micromamba, rattler, venv\n"
    )


def test_bad_mirror_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lock", "--recipe", "kepler-cu92", "--channel-mirror", "conda-forge"]) == 2
    assert capsys.readouterr().err.splitlines()[0] == "error: --channel-mirror 'conda-forge' is not NAME=URL"


def test_env_show_without_any_backend(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(backends, "rattler_available", lambda: False)
    assert main(["env", "show", "--recipe", "kepler-cu92"]) == 0
    out = capsys.readouterr().out
    assert (
        "backend: none available here: no way to make a conda environment here: no micromamba, mamba or conda on "
        "PATH, and no py-rattler (install py-rattler (pip install py-rattler, Python >= 3.10) or micromamba) "
        f"prefix: {Paths.resolve(environ=os.environ).envs_dir}/"
    ) in " ".join(out.split())  # the words, whatever the wrapping
    assert " ".join(out.split()).endswith("(not created yet)")  # wrapped where the path ends
