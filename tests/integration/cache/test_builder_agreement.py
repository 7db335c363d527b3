"""``srcbuild install`` must compute the same fingerprint as the build command, or it never finds a build."""

from __future__ import annotations

import os

import pytest

from srcbuild.cache.install import request_inputs
from srcbuild.cache.key import FingerprintInputs, fingerprint
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", ["kepler-cu92", "kepler-k80-cu118-mpi", "pascal-cu126"])
@pytest.mark.parametrize("package", ["torch", "torchvision"])
def test_install_and_build_agree_on_the_fingerprint(name: str, package: str) -> None:
    run = pytest.importorskip("srcbuild.execute.run")
    inputs_module = pytest.importorskip("srcbuild.plan.inputs")
    paths = Paths.resolve()
    recipe = RecipeCatalog(paths).load(name)
    prepared = run.prepare(recipe, inputs_module.BuildOptions(package=package), paths, os.environ)
    built = FingerprintInputs.from_recipe(recipe, package, prepared.plan.env.final_values())
    assert fingerprint(built) == fingerprint(request_inputs(recipe, package))
