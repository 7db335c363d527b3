"""A cache lookup keys on what a build's fingerprint counts, computed without resolving the build:
the same inputs as ``key_inputs(resolve_unprobed(...))`` for every recipe, package and portable
choice, so `srcbuild install` finds what `srcbuild torch` stored."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from srcbuild.errors import RecipeError
from srcbuild.packages import pinned_packages
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.resolve.key import build_fingerprint, key_inputs
from srcbuild.resolve.request import request_fingerprint, request_inputs
from srcbuild.resolve.resolver import resolve_unprobed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "recipes"
PLATFORM = "linux_x86_64"


def _recipes() -> list[Recipe]:
    """The catalog, and the test worlds' recipes that load without their world (patches, portable)."""
    catalog = RecipeCatalog(Paths.resolve(environ={}))
    world = []
    for path in sorted((FIXTURES / "world").glob("*.toml")):
        try:
            world.append(catalog.load(str(path)))
        except RecipeError:  # a patch of the world's own tree
            continue
    return [*catalog.load_all(), *world]


def _packages(recipe: Recipe) -> list[str]:
    return list(pinned_packages(recipe))


@pytest.mark.parametrize("environ", [{}, {"SRCBUILD_PORTABLE": "1"}], ids=["plain", "portable"])
def test_the_request_has_the_key_of_the_unprobed_resolve(environ: dict[str, str]) -> None:
    compared = 0
    for recipe in _recipes():
        for package in _packages(recipe):
            try:
                resolved = resolve_unprobed(recipe, package, PLATFORM, environ)
            except Exception as exc:  # a recipe the resolver refuses: the request must refuse it alike
                with pytest.raises(type(exc)):
                    request_inputs(recipe, package, environ, PLATFORM)
                continue
            assert request_inputs(recipe, package, environ, PLATFORM) == key_inputs(resolved), (recipe.name, package)
            assert request_fingerprint(recipe, package, environ, PLATFORM) == build_fingerprint(resolved)
            compared += 1
    assert compared >= 20


def test_a_build_variable_the_knowledge_adds_for_an_old_tag_counts() -> None:
    """torch <2.8 on cmake 4 needs CMAKE_POLICY_VERSION_MINIMUM (left out of the key: it only lets a
    newer cmake accept old sources); a recipe value of a variable the key counts enters it."""
    recipe = RecipeCatalog(Paths.resolve(environ={})).load("kepler-cu92")
    plain = request_inputs(recipe, "torch", {}, PLATFORM)
    assert "CMAKE_POLICY_VERSION_MINIMUM" not in dict(plain.build_env)
    changed = dataclasses.replace(recipe, build=dataclasses.replace(recipe.build, env=(("USE_NCCL", "1"),)))
    assert dict(request_inputs(changed, "torch", {}, PLATFORM).build_env)["USE_NCCL"] == "1"
    assert request_fingerprint(changed, "torch", {}, PLATFORM) != request_fingerprint(recipe, "torch", {}, PLATFORM)


def test_a_patched_recipe_keys_its_patches_by_content(tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ={})).load("kepler-cu92")
    patch = tmp_path / "0001-x.patch"
    patch.write_text("--- a/x\n+++ b/x\n")
    build = dataclasses.replace(recipe.build, patches=("torch/0001-x.patch",), patch_files=(patch,))
    patched = dataclasses.replace(recipe, build=build)
    for package in _packages(patched):
        resolved = resolve_unprobed(patched, package, PLATFORM, {})
        assert request_inputs(patched, package, {}, PLATFORM) == key_inputs(resolved)
    before = request_fingerprint(patched, "torch", {}, PLATFORM)
    patch.write_text("--- a/x\n+++ b/x\n+changed\n")
    assert request_fingerprint(patched, "torch", {}, PLATFORM) != before
