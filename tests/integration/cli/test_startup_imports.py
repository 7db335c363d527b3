"""Short commands import only what they use: ``python -X importtime`` lists every module a run
imports, and none of the heavy ones below may appear for the commands people run most."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

# Modules a short command has no use for: the ELF reader, S3, the conda solver, YAML, the event
# loop, and srcbuild's own build, cache-maintenance and verification packages.
HEAVY = (
    "elftools",
    "boto3",
    "botocore",
    "rattler",
    "yaml",
    "asyncio",
    "srcbuild.verify.fatbin",
    "srcbuild.verify.symbols",
    "srcbuild.cache.maintenance",
    "srcbuild.execute",
    "srcbuild.plan",
)
# --help lists the commands from their summaries: no command module, no table renderer, no knowledge.
HELP_HEAVY = (*HEAVY, "rich", "srcbuild.knowledge", "srcbuild.resolve", "srcbuild.cache", "srcbuild.recipe")
# install computes the fingerprint from what it counts (resolve.request), never the whole resolve: no
# resolver, environment backends, rules, toolchain provisioning, host probe or sources; and it prints
# lines, not tables. With no remote it needs no HTTP client, and it takes no build lock. packaging's
# requirement parser (whose regexes compile on import) waits for a wheel with dependencies, after pip.
# Signatures (cryptography) are checked for a remote's entry, never for the local store's hit.
INSTALL_HEAVY = (
    *HEAVY,
    "cryptography",
    "srcbuild.cache.sshsig",
    "packaging.requirements",
    "srcbuild.cache.pins",
    "rich",
    "http.client",
    "urllib.request",
    "ssl",
    "filelock",
    "srcbuild.cache.netio",
    "srcbuild.resolve.variables",
    "srcbuild.resolve.resolver",
    "srcbuild.resolve.model",
    "srcbuild.envs",
    "srcbuild.rules",
    "srcbuild.toolchain",
    "srcbuild.host.probe",
    "srcbuild.host.toolchain",
    "srcbuild.sources",
    "srcbuild.compiler_cache",
)

# doctor probes the machine and judges every recipe, but builds, downloads, solves and draws tables
# for nothing: no environment backends, HTTP client, file lock or table renderer.
DOCTOR_HEAVY = (
    *HEAVY,
    "rich",
    "http.client",
    "urllib.request",
    "filelock",
    "srcbuild.envs.backends",
    "srcbuild.envs.prefix",
    "srcbuild.cli.compat",
    "srcbuild.resolve.resolver",
    "srcbuild.sources",
)


def imported(args: list[str], tmp_path: Path, says: str = "") -> set[str]:
    """The modules ``srcbuild ARGS`` imports (its output holding ``says``)."""
    env = {**os.environ, "SRCBUILD_CACHE_DIR": str(tmp_path / "cache"), "SRCBUILD_WORK_DIR": str(tmp_path / "w")}
    env.pop("SRCBUILD_CONFIG", None)
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "srcbuild", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert "internal error" not in run.stderr, run.stderr
    assert says in run.stdout, run.stdout + run.stderr[-2000:]
    names = set()
    for line in run.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "srcbuild.cli" in names or args in (["--help"], ["-h"]), run.stderr[-2000:]
    return names


def heavy_in(names: set[str], heavy: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in heavy))


def test_help_imports_no_command(tmp_path: Path) -> None:
    assert heavy_in(imported(["--help"], tmp_path), HELP_HEAVY) == []


def test_help_alone_imports_not_even_click(tmp_path: Path) -> None:
    """``srcbuild --help`` is printed from ``srcbuild.usage`` (the text click prints:
    tests/unit/cli/test_fast_help.py), without click, the command group or the package registry."""
    for args in (["--help"], ["-h"]):
        found = imported(args, tmp_path, says="Usage: srcbuild [OPTIONS] COMMAND [ARGS]...")
        assert heavy_in(found, ("click", "srcbuild.cli", "srcbuild.packages", "dataclasses")) == []


def test_recipes_list_imports_nothing_heavy(tmp_path: Path) -> None:
    assert heavy_in(imported(["recipes", "list"], tmp_path), (*HEAVY, "srcbuild.resolve", "srcbuild.rules")) == []


def test_install_imports_nothing_heavy(tmp_path: Path) -> None:
    # nothing is cached: install looks up, reports the miss (exit 4) and imports only that path
    found = imported(["install", "torch", "--recipe", "kepler-cu102", "--dry-run"], tmp_path)
    assert heavy_in(found, INSTALL_HEAVY) == []


def test_an_install_hit_imports_nothing_heavy(tmp_path: Path) -> None:
    """A hit: lookup, the fit check against the target interpreter, then pip (not run: --dry-run)."""
    from srcbuild.cache.store import WheelCache
    from srcbuild.paths import Paths
    from srcbuild.recipe import RecipeCatalog
    from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ={})).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag())
    WheelCache(tmp_path / "cache").store(wheel, make_manifest(wheel, recipe, platform=None))
    args = ["install", "torch", "--recipe", str(recipe_file), "--python", sys.executable, "--dry-run"]
    found = imported([*args, "--cache-dir", str(tmp_path / "cache")], tmp_path, says="would install torch-1.7.1")
    assert heavy_in(found, INSTALL_HEAVY) == []


def test_doctor_imports_nothing_heavy(tmp_path: Path) -> None:
    found = imported(["doctor"], tmp_path, says="recipe")
    assert heavy_in(found, DOCTOR_HEAVY) == []


def test_a_build_plan_imports_no_http_client(tmp_path: Path) -> None:
    """A build resolves and plans through the environment backends without downloading anything:
    ``urllib.request`` (with ``http.client``, ``ssl`` and ``email``, about 70 ms of its fixed cost)
    is imported by a download alone."""
    found = imported(["plan", "torch", "--recipe", "kepler-cu102"], tmp_path, says="Plan: torch")
    assert heavy_in(found, ("http.client", "urllib.request", "ssl", "email")) == []
