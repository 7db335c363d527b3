"""``srcbuild install torchvision`` hands pip the knowledge base's run-time pins with the wheel's own
requirements: real pip, a find-links directory holding pillow 9.5.0 and 10.0.0, no index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.integration.cache.test_share import pip_show_version
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration


@pytest.fixture()
def pillows(tmp_path: Path, plain_pip: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees two pillow-named wheels in a directory and nothing else."""
    links = tmp_path / "links"
    for version in ("9.5.0", "10.0.0"):
        make_wheel(links, name="pillow", version=version, tag="py3-none-any")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def _cached_torchvision(tmp_path: Path, base: str, version: str, requires: str) -> tuple[Path, Path]:
    """A cache holding ``base``'s torchvision wheel (for this Python) that requires ``requires``:
    (the cache directory, the recipe file)."""
    recipe_file = host_python_recipe(tmp_path / "recipes", base=base)
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    local = recipe.local_version()
    wheel = make_wheel(
        tmp_path / "dist", name="torchvision", version=f"{version}+{local}", tag=host_tag(), requires=[requires]
    )
    cache = tmp_path / "cache"
    manifest = make_manifest(wheel, recipe, sass=(30,), ptx=(30,), package="torchvision", platform=None)
    WheelCache(cache).store(wheel, manifest)
    return cache, recipe_file


def _install(cache: Path, recipe_file: Path, venv: Path, *more: str, verbose: bool = False) -> int:
    argv = ["install", "torchvision", "--recipe", str(recipe_file), "--into", str(venv), "--cache-dir", str(cache)]
    return main([*(["-v"] if verbose else []), *argv, *more])


def test_torchvision_0_12_and_older_gets_pillow_below_10(
    pillows: Path, tmp_path: Path, fresh_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """torchvision 0.8.2 asks for pillow >=4.1.1 (its setup.py); pillow 10 breaks 0.12 and older
    (pytorch/vision#5898): pip is given pillow<10 with that requirement and installs 9.5.0."""
    cache, recipe_file = _cached_torchvision(tmp_path, "kepler-cu92", "0.8.2", "pillow >=4.1.1")
    assert _install(cache, recipe_file, fresh_venv, verbose=True) == 0, capsys.readouterr().err
    assert pip_show_version(fresh_venv, "torchvision") == "0.8.2+cu92.sm30"
    assert pip_show_version(fresh_venv, "pillow") == "9.5.0"
    out = capsys.readouterr()
    assert "pillow!=8.3.*,<10,>=4.1.1" in out.out + out.err  # the dependency command as -v echoes it


def test_a_newer_torchvision_takes_the_newest_pillow(pillows: Path, tmp_path: Path, fresh_venv: Path) -> None:
    """torchvision 0.13.1 is only kept off pillow 8.3: the same directory gives it pillow 10.0.0."""
    cache, recipe_file = _cached_torchvision(tmp_path, "pascal-mx150-cu113", "0.13.1", "pillow!=8.3.*,>=5.3.0")
    assert _install(cache, recipe_file, fresh_venv) == 0
    assert pip_show_version(fresh_venv, "pillow") == "10.0.0"


def test_no_deps_installs_the_wheel_alone(pillows: Path, tmp_path: Path, fresh_venv: Path) -> None:
    cache, recipe_file = _cached_torchvision(tmp_path, "kepler-cu92", "0.8.2", "pillow >=4.1.1")
    assert _install(cache, recipe_file, fresh_venv, "--no-deps") == 0
    assert pip_show_version(fresh_venv, "pillow") is None
