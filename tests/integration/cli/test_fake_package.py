"""Adding a package is one registry entry: a fake fourth package, registered with one
``srcbuild.packages.PACKAGES`` entry and nothing else, is a recipe table (``recipes show``), a plan
(``plan``), an install (``install --dry-run``) and a cache pull (``cache pull --recipe``).

docs/architecture.md's "Adding a package" says so; this test keeps it true.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.packages import PACKAGES, PackageSpec
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.integration.execute.world import RECIPES
from tests.unit.cache.synthetic import host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration

FAKE = PackageSpec(
    name="torchfake",
    checkout_name="fake",
    recipe_table="torchfake",
    patch_dir="torchfake",
    applies_recipe_patches=False,
    needs_torch_wheel=True,
    default_repo="https://github.com/example/fake",
    summary="Build a torchfake wheel against the recipe's torch wheel (built first when missing).",
    cuda_variables=(("FAKE_CUDA", "1"),),
)
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture()
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PACKAGES, FAKE.name, FAKE)  # the one edit


@pytest.fixture()
def recipe_file(tmp_path: Path) -> Path:
    """world-kepler-cu118 (torch 2.5.1, CUDA 11.8) for this Python, pinning the fake package."""
    text = (RECIPES / "world-kepler-cu118.toml").read_text()
    text = text.replace('name = "world-kepler-cu118"', 'name = "fake-pkg"')
    text = text.replace('python = "3.11"', f'python = "{PY}"')
    path = tmp_path / "recipes" / "fake-pkg.toml"
    path.parent.mkdir()
    path.write_text(text + '\n[torchfake]\ntag = "v1.0.0"\n')
    return path


def test_a_fourth_package_is_one_registry_entry(
    registered: None, recipe_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recipes", "show", str(recipe_file), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["torchfake"] == {"tag": "v1.0.0", "commit": None, "repo": "https://github.com/example/fake"}

    assert main(["plan", "torchfake", "--recipe", str(recipe_file), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["package"] == "torchfake" and plan["version"] == "1.0.0+cu118.sm35.sm37"
    steps = [step["id"] for step in plan["steps"]]
    assert steps.index("preflight") < steps.index("torch-wheel") < steps.index("install-torch") < steps.index("build")
    variables = {v["name"]: v["value"] for v in plan["build_env"] if v["op"] == "set"}
    assert variables["BUILD_VERSION"] == "1.0.0+cu118.sm35.sm37" and variables["FAKE_CUDA"] == "1"
    assert variables["PYTORCH_VERSION"] == "2.5.1+cu118.sm35.sm37"

    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", name="torchfake", version="1.0.0+cu118.sm35.sm37", tag=host_tag())
    share = tmp_path / "share"
    WheelCache(share).store(wheel, make_manifest(wheel, recipe, sass=(35, 37), package="torchfake", platform=None))
    local = tmp_path / "local"
    remote = ["--remote", str(share), "--trust-unsigned", "--cache-dir", str(local)]

    install = ["install", "torchfake", "--recipe", str(recipe_file), "--python", sys.executable, "--dry-run"]
    assert main([*install, *remote]) == 0
    assert " ".join(capsys.readouterr().out.split()).startswith(f"would install {wheel.name} from {share}")

    assert main(["cache", "pull", "--recipe", str(recipe_file), *remote]) == 0
    assert capsys.readouterr().out.endswith("1 fetched\n")
    assert [p.name for p in local.rglob("*.whl")] == [wheel.name]
