"""``srcbuild install --dry-run`` finds and checks the wheel on a remote without downloading it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration


def words(text: str) -> str:
    """The output's words, whatever its wrapping to 80 columns."""
    return " ".join(text.split())


def test_dry_run_downloads_nothing_and_a_real_install_does(
    tmp_path: Path, fresh_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag(), payload=os.urandom(4096))
    share = tmp_path / "share"
    WheelCache(share).store(wheel, make_manifest(wheel, recipe, sass=(30,), ptx=(30,), platform=None))
    local = tmp_path / "local"
    argv = ["install", "torch", "--recipe", str(recipe_file), "--into", str(fresh_venv), "--cache-dir", str(local)]
    argv += ["--remote", str(share), "--trust-unsigned"]

    assert main([*argv, "--dry-run"]) == 0
    out = words(capsys.readouterr().out)
    assert out.startswith(f"would install {wheel.name} from {share}")
    assert not list(local.rglob("*.whl"))  # nothing was fetched into the local cache

    assert main(argv) == 0
    assert words(capsys.readouterr().out).startswith(f"installed {wheel.name} from {share}")
    assert len(list(local.rglob("*.whl"))) == 1
