"""Each setting decided once, before the probe: default < recipe < config file < environment <
command line, each value with its origin (``srcbuild.precedence``, ``srcbuild.resolve.decide``)."""

from __future__ import annotations

import dataclasses

import pytest

from srcbuild.config import SOURCES_VAR
from srcbuild.errors import UsageError
from srcbuild.paths import Paths
from srcbuild.precedence import Chosen, precedence
from srcbuild.resolve import BuildHost, BuildOptions
from srcbuild.resolve.decide import decide
from srcbuild.resolve.settings import resolve_settings
from tests.unit.plan.conftest import load

CONFIG = {SOURCES_VAR: "/home/u/.config/srcbuild/config.toml\nSRCBUILD_COMPILER_CACHE SRCBUILD_PORTABLE"}


def test_the_last_layer_that_says_something_wins() -> None:
    default = Chosen("a", "default")
    assert precedence(default) == default
    assert precedence(default, Chosen("b", "recipe"), None) == Chosen("b", "recipe")
    env = Chosen("c", "environment X")
    assert precedence(default, Chosen("b", "recipe"), env, None) == env


def test_each_layer_of_the_compiler_cache_with_its_origin(paths: Paths) -> None:
    recipe = load(paths, "world-kepler-cu118")
    assert decide(recipe, BuildOptions(), {}).compiler_cache == Chosen(
        "auto", "default (sccache, else ccache, when installed)"
    )
    in_recipe = dataclasses.replace(recipe, build=dataclasses.replace(recipe.build, compiler_cache="ccache"))
    assert decide(in_recipe, BuildOptions(), {}).compiler_cache == Chosen("ccache", "recipe [build] compiler_cache")
    configured = {**CONFIG, "SRCBUILD_COMPILER_CACHE": "none"}
    assert decide(in_recipe, BuildOptions(), configured).compiler_cache == Chosen(
        "none", "config file /home/u/.config/srcbuild/config.toml (compiler_cache)"
    )
    assert decide(in_recipe, BuildOptions(), {"SRCBUILD_COMPILER_CACHE": "sccache"}).compiler_cache == Chosen(
        "sccache", "environment SRCBUILD_COMPILER_CACHE"
    )
    by_cli = BuildOptions(compiler_cache="ccache")
    assert decide(in_recipe, by_cli, configured).compiler_cache == Chosen("ccache", "command line --compiler-cache")
    # SRCBUILD_CCACHE is read one way: a yes/no value (anything else is an error), empty is unset
    assert decide(recipe, BuildOptions(), {"SRCBUILD_CCACHE": "off"}).compiler_cache.value == "none"
    assert decide(recipe, BuildOptions(), {"SRCBUILD_CCACHE": ""}).compiler_cache.value == "auto"
    with pytest.raises(UsageError, match="SRCBUILD_CCACHE='sometimes' is not a yes/no value"):
        decide(recipe, BuildOptions(), {"SRCBUILD_CCACHE": "sometimes"})


def test_what_is_left_to_the_host_is_none_until_the_probe(paths: Paths, host: BuildHost) -> None:
    recipe = load(paths, "world-kepler-cu118")
    decided = decide(recipe, BuildOptions(), {})
    assert decided.cuda_home == Chosen(None, "host probe") and decided.max_jobs.value is None
    cli = decide(recipe, BuildOptions(cuda_home="/opt/cuda", max_jobs=3), {"SRCBUILD_CUDA_HOME": "/x", "MAX_JOBS": "2"})
    assert (cli.cuda_home, cli.max_jobs) == (
        Chosen("/opt/cuda", "command line --cuda-home"),
        Chosen(3, "command line --max-jobs"),
    )
    # the settings shown are the decided ones, the host filling in only what was left to it
    shown = {s.name: s for s in resolve_settings(recipe, BuildOptions(max_jobs=3), host, {}, None, cli).settings}
    assert (shown["cuda_home"].value, shown["cuda_home"].source) == ("/opt/cuda", "command line --cuda-home")
    assert (shown["max_jobs"].value, shown["max_jobs"].source) == ("3", "command line --max-jobs")
    with pytest.raises(UsageError, match="MAX_JOBS='many' is not a whole number"):
        decide(recipe, BuildOptions(), {"MAX_JOBS": "many"})
