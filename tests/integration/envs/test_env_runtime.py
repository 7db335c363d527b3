"""`srcbuild env runtime`: a Python of a given version for running wheels, from rattler or a venv,
and `srcbuild install --into DIR --create` making it first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from worlds.conda_channel import channel_url, host_python_packages, make_channel

from srcbuild.cli import main

pytestmark = pytest.mark.integration

PYTHON = ".".join(str(v) for v in sys.version_info[:2])


def test_rattler_makes_a_python_with_pip_from_the_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    channel = make_channel(tmp_path / "conda-forge", host_python_packages())
    monkeypatch.setenv("SRCBUILD_CHANNEL_MIRRORS", f"conda-forge={channel_url(channel)}")
    monkeypatch.setenv("COLUMNS", "160")  # the temporary paths are long
    into = tmp_path / "venvs" / "old-gpu"
    argv = ["env", "runtime", "--python", PYTHON, "--into", str(into), "--backend", "rattler"]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"made Python {PYTHON}.") and out[0].endswith("(conda-forge (rattler))")
    assert out[1] == f"use it: {into}/bin/python -m pip install PACKAGES"
    assert out[2] == f"or: srcbuild install torch --recipe R --into {into}"
    assert (into / "conda-meta").is_dir()
    pip = subprocess.run([str(into / "bin" / "python"), "-m", "pip", "--version"], capture_output=True, text=True)
    assert pip.returncode == 0 and pip.stdout.startswith("pip "), pip.stdout + pip.stderr
    assert main(argv) == 2  # a second time: it is there already, said in one line
    assert capsys.readouterr().err.startswith(f"error: {into} holds a Python already")


def test_a_venv_where_the_system_has_that_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    into = tmp_path / "rt"
    assert main(["env", "runtime", "--python", PYTHON, "--into", str(into), "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["route"].startswith("venv of ") and made["version"].startswith(PYTHON + ".")
    assert (into / "pyvenv.cfg").is_file()


def test_a_channel_without_that_python_fails_in_one_line_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    channel = make_channel(tmp_path / "conda-forge", host_python_packages())
    monkeypatch.setenv("SRCBUILD_CHANNEL_MIRRORS", f"conda-forge={channel_url(channel)}")
    into = tmp_path / "rt37"
    assert main(["env", "runtime", "--python", "3.2", "--into", str(into), "--backend", "rattler"]) == 8
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: making Python 3.2 from ") and err[1].startswith("hint: ")
    assert not into.exists() and not list(tmp_path.glob(".rt37*"))
    assert main(["env", "runtime", "--python", "three", "--into", str(into)]) == 2


def test_install_create_looks_in_the_cache_before_making_a_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--create with an empty cache stops at the wheel (exit 9) and makes no Python; with the
    wheel cached it makes --into with the recipe's Python (here a file recipe pinning this one)
    and installs the wheel there."""
    import os

    from srcbuild.cache.store import WheelCache
    from srcbuild.paths import Paths
    from srcbuild.recipe import RecipeCatalog
    from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

    recipe_file = host_python_recipe(tmp_path / "recipes")  # kepler-cu92 with the Python running the tests
    into = tmp_path / "venvs" / "old-gpu"
    argv = ["install", "torch", "--recipe", str(recipe_file), "--into", str(into), "--create", "--no-deps"]
    assert main(argv) == 9
    err = capsys.readouterr().err
    assert err.startswith("error: no cached wheel for torch of recipe") and "made Python" not in err
    assert not into.exists()
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag())
    WheelCache(Path(os.environ["SRCBUILD_CACHE_DIR"])).store(
        wheel, make_manifest(wheel, recipe, sass=(30,), ptx=(30,), platform=None)
    )
    assert main(argv) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert f"made Python {PYTHON}." in err and (into / "bin" / "python").exists()
    assert " ".join(out.split()) == f"installed {wheel.name} from the local cache into {into}/bin/python"
