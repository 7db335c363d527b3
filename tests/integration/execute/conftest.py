"""Fixtures of the build tests: the published fixture world, a build venv, and a CLI runner."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.execute.world import RECIPES, publish
from tests.worlds.gitworld import World

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return publish(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="session")
def build_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain venv of this Python: everything the fake torch's setup.py needs."""
    prefix = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(prefix)], check=True)
    return prefix


PY = f"{sys.version_info.major}.{sys.version_info.minor}"
CP = f"cp{sys.version_info.major}{sys.version_info.minor}"  # the wheel tag builds of this Python get
_WORLD_RECIPES: list[Path] = []


def world_recipes() -> Path:
    """The world recipes with ``toolchain.python`` set to the running Python, whose venv builds
    them (the files pin 3.11; a host with another Python builds the same recipes)."""
    if not _WORLD_RECIPES:
        directory = Path(tempfile.mkdtemp(prefix="srcbuild-world-recipes-"))
        atexit.register(shutil.rmtree, directory, True)
        for file in RECIPES.glob("*.toml"):
            text = re.sub(r'(?m)^python = "3\.\d+"', f'python = "{PY}"', file.read_text())
            (directory / file.name).write_text(text)
        _WORLD_RECIPES.append(directory)
    return _WORLD_RECIPES[0]


def recipe(name: str) -> str:
    return str(world_recipes() / f"{name}.toml")


@dataclass
class Ran:
    rc: int
    out: str

    @property
    def last_line(self) -> str:
        lines = [line for line in self.out.splitlines() if line.strip()]
        return lines[-1] if lines else ""


@dataclass
class Srcbuild:
    """Runs ``python -m srcbuild`` as a user would, with the test's work and cache dirs."""

    env: dict[str, str]
    world: World
    venv: Path

    def args(self, command: str, recipe_name: str, *extra: str, env_prefix: Path | None = None) -> list[str]:
        argv = [sys.executable, "-m", "srcbuild", command]
        if command == "plan":
            argv.append(extra[0])
            extra = extra[1:]
        argv += ["--recipe", recipe(recipe_name), "--mirror", self.world.mirror_rule]
        argv += ["--env", str(env_prefix or self.venv), *extra]
        return argv

    def run(self, command: str, recipe_name: str, *extra: str, env: dict[str, str] | None = None, **kw: object) -> Ran:
        done = subprocess.run(
            self.args(command, recipe_name, *extra, **kw),  # type: ignore[arg-type]
            env={**self.env, **(env or {})},
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        return Ran(done.returncode, done.stdout)

    def popen(
        self, command: str, recipe_name: str, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.args(command, recipe_name, *extra),
            env={**self.env, **(env or {})},
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    @property
    def work_dir(self) -> Path:
        return Path(self.env["SRCBUILD_WORK_DIR"])

    @property
    def cache_dir(self) -> Path:
        return Path(self.env["SRCBUILD_CACHE_DIR"])

    def checkout(self, recipe_name: str, package: str = "torch") -> Path:
        return self.work_dir / "src" / recipe_name / ("pytorch" if package == "torch" else "vision")

    def build_log(self, recipe_name: str, package: str = "torch") -> Path:
        logs = self.work_dir / "builds" / f"{recipe_name}-{package}" / "logs"
        return next(logs.glob("*-build.log"))

    def configure_log(self, recipe_name: str) -> Path:
        """The log of torch's canary step: the configure (CMake's -D lines and summary) runs there."""
        logs = self.work_dir / "builds" / f"{recipe_name}-torch" / "logs"
        return next(logs.glob("*-canary.log"))


def srcbuild_env(cuda_home: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_TORCH_", "CUDA_"))}
    env["SRCBUILD_CCACHE"] = "0"  # timings and rebuild counts without a compiler cache
    if cuda_home is not None:
        env["CUDA_HOME"] = str(cuda_home)
    return env


@pytest.fixture
def srcbuild_118(world: World, build_venv: Path, cuda118_home: Path, gcc11: Path) -> Srcbuild:
    return Srcbuild(srcbuild_env(cuda118_home), world, build_venv)


@pytest.fixture
def srcbuild_130(world: World, build_venv: Path, cuda13_home: Path) -> Srcbuild:
    # This machine's CUDA 13 holds nvcc and cudart only (no cuBLAS, cuSPARSE, ...): a real torch
    # build stops there, the fixture torch includes none of those headers, so the complete-home
    # contract is a warning for these builds.
    return Srcbuild({**srcbuild_env(cuda13_home), "SRCBUILD_CUDA_CONTRACT": "warn"}, world, build_venv)


def wheel_names(directory: Path) -> Sequence[str]:
    return sorted(p.name for p in directory.rglob("*.whl"))
