"""Shared inputs of the plan tests: a catalog recipe, fixed host facts and paths, no subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.paths import Paths
from srcbuild.plan import BuildHost, BuildOptions
from srcbuild.recipe import Recipe, RecipeCatalog

FIXTURE_RECIPES = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "world"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths.resolve(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache", environ={})


def load(paths: Paths, name: str) -> Recipe:
    if (FIXTURE_RECIPES / f"{name}.toml").is_file():
        return RecipeCatalog(paths).load(str(FIXTURE_RECIPES / f"{name}.toml"))
    return RecipeCatalog(paths).load(name)


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
    )


@pytest.fixture
def options() -> BuildOptions:
    return BuildOptions(package="torch", mirrors=("https://github.com/=file:///mirror/",), env_prefix="/envs/py311")
