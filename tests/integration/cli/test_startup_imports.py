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


def imported(args: list[str], tmp_path: Path) -> set[str]:
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
    names = set()
    for line in run.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "srcbuild.cli" in names, run.stderr[-2000:]
    return names


def heavy_in(names: set[str], heavy: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in heavy))


def test_help_imports_no_command(tmp_path: Path) -> None:
    assert heavy_in(imported(["--help"], tmp_path), HELP_HEAVY) == []


def test_recipes_list_imports_nothing_heavy(tmp_path: Path) -> None:
    assert heavy_in(imported(["recipes", "list"], tmp_path), (*HEAVY, "srcbuild.resolve", "srcbuild.rules")) == []


def test_install_imports_nothing_heavy(tmp_path: Path) -> None:
    # nothing is cached: install looks up, reports the miss (exit 4) and imports only that path
    assert heavy_in(imported(["install", "torch", "--recipe", "kepler-cu102", "--dry-run"], tmp_path), HEAVY) == []
