"""A recipe's gcc major whose later releases are known bad with its CUDA gets a pinned good release:
torch 1.12.1 + CUDA 11.3 + gcc 10 provisions conda-forge's gcc 10.2.*, not 10.* (which picks 10.3 or
later, and gcc 10.3+ breaks nvcc up to 11.4.0); a host gcc 10.4 is not taken for it."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from srcbuild.host.facts import GccInstall, HostFacts
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.toolchain.data_files import load_facts
from srcbuild.toolchain.needs import _on_host, gcc_release, requests_for
from srcbuild.toolchain.providers.base import Request
from srcbuild.toolchain.provision import choose
from tests.unit.host.test_host_doctor_render import K80_BOX


def test_the_gcc_release_follows_the_known_bad_minors() -> None:
    assert gcc_release("10", "11.3") == "10.2"
    assert gcc_release("10", "11.4.0") == "10.2"
    assert gcc_release("10", "11.4.1") == "10"  # fixed in 11.4.1: any gcc 10
    assert gcc_release("11", "11.5") == "11.1"  # gcc 11.2 and later: not with CUDA 11.5 and older
    assert gcc_release("9", "11.3") == "9"
    assert gcc_release("10", None) == "10"


def test_the_catalog_recipe_on_gcc_10_requests_and_installs_gcc_10_2() -> None:
    catalog = RecipeCatalog(Paths.resolve(environ=os.environ)).load_all()
    recipe = next(r for r in catalog if r.name == "pascal-mx150-cu113")
    recipe = dataclasses.replace(recipe, toolchain=dataclasses.replace(recipe.toolchain, gcc="10"))
    (gcc,) = [r for r in requests_for(recipe) if r.tool == "gcc"]
    assert gcc == Request("gcc", "10.2")
    assert choose(gcc, load_facts({})).origin == "conda-forge: gcc_linux-64 10.2.* gxx_linux-64 10.2.*"


def test_a_host_gcc_past_the_pinned_release_is_not_taken() -> None:
    def host(version: str) -> HostFacts:
        return dataclasses.replace(K80_BOX, gccs=(GccInstall(10, version, Path(f"/opt/gcc-{version}")),))

    assert _on_host(Request("gcc", "10.2"), host("10.4.0")) is None
    assert _on_host(Request("gcc", "10.2"), host("10.2.1")) == Path("/opt/gcc-10.2.1")
    assert _on_host(Request("gcc", "10"), host("10.4.0")) == Path("/opt/gcc-10.4.0")
