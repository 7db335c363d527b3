"""Shared inputs of the plan tests: a catalog recipe, fixed host facts and paths, no subprocess.

The plan tests resolve with ``host.facts`` None (no host rules) unless a test sets facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.plan import Plan, make_plan
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.resolve import BuildHost, BuildOptions, ResolvedBuild, resolve

FIXTURE_RECIPES = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "world"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths.resolve(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache", environ={})


def load(paths: Paths, name: str) -> Recipe:
    if (FIXTURE_RECIPES / f"{name}.toml").is_file():
        return RecipeCatalog(paths).load(str(FIXTURE_RECIPES / f"{name}.toml"))
    return RecipeCatalog(paths).load(name)


def resolved_for(
    recipe: Recipe, options: BuildOptions, host: BuildHost, paths: Paths, environ: Mapping[str, str]
) -> ResolvedBuild:
    return resolve(recipe, options, host, load_knowledge(), paths=paths, environ=environ)


def plan_for(recipe: Recipe, options: BuildOptions, host: BuildHost, paths: Paths, environ: Mapping[str, str]) -> Plan:
    """The plan of ``recipe`` resolved with these inputs: what ``srcbuild plan`` prints."""
    return make_plan(resolved_for(recipe, options, host, paths, environ))


@pytest.fixture
def host() -> BuildHost:
    return BuildHost(
        gcc=Path("/usr/bin/gcc-11"),
        gxx=Path("/usr/bin/g++-11"),
        cuda_home=Path("/opt/cuda-11.8"),
        cuda_home_source="host probe (CUDA_HOME: nvcc 11.8.89)",
        ccache=None,
        python=Path("/usr/bin/python3.11"),
        max_jobs=4,
        max_jobs_reason="4 cores; 32.0 GiB of memory allows 10 jobs at 3 GiB each",
        update_alternatives="update-alternatives",
        platform="linux_x86_64-glibc2.36",
    )


@pytest.fixture
def options() -> BuildOptions:
    return BuildOptions(package="torch", mirrors=("https://github.com/=file:///mirror/",), env_prefix="/envs/py311")
