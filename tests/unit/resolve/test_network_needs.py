"""The hosts a build fetches from, stated before anything is fetched."""

from __future__ import annotations

from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve.network import network_line, network_needs
from srcbuild.resolve.resolver import resolve_unprobed


def test_a_fresh_machine_names_the_environment_channels_and_the_source_host() -> None:
    recipe = RecipeCatalog(Paths.resolve(environ={})).load("kepler-cu102")
    resolved = resolve_unprobed(recipe, "torch")
    needs = dict(network_needs(resolved))
    assert needs["github.com"] == "torch v1.10.2 sources"
    assert "the Python 3.9 environment" in needs["conda-forge"]
    line = network_line(resolved)
    assert line.startswith("fetches from: ") and "github.com (torch v1.10.2 sources)" in line
