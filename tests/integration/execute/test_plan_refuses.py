"""``srcbuild plan`` refuses what ``srcbuild torch`` refuses: the same findings, words and exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.execute.conftest import Ran, Srcbuild

pytestmark = pytest.mark.integration


def _verdict(ran: Ran) -> list[str]:
    """The finding, error and hint lines of a refusal, in order."""
    marks = ("error", "warning", "fix:", "hint:", "source:")
    return [line.strip() for line in ran.out.splitlines() if line.strip().startswith(marks)]


def test_incompatible_pins_are_refused_by_plan_as_by_the_build(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    fresh = {"SRCBUILD_CACHE_DIR": str(tmp_path / "cache")}
    built = srcbuild_118.run("torch", "world-kepler-cu118-gcc12", env=fresh)
    planned = srcbuild_118.run("plan", "world-kepler-cu118-gcc12", "torch", env=fresh)
    assert built.rc == planned.rc == 3, planned.out
    assert "error: recipe world-kepler-cu118-gcc12 breaks 1 compatibility rule(s)" in planned.out
    assert _verdict(planned) == _verdict(built)
    assert "Steps:" not in planned.out  # no plan is printed
    for fmt in ("json", "shell"):
        again = srcbuild_118.run("plan", "world-kepler-cu118-gcc12", "torch", "--format", fmt, env=fresh)
        assert (again.rc, _verdict(again)) == (3, _verdict(built))
    # --ignore-preflight: the findings are shown, the plan too
    ignored = srcbuild_118.run("plan", "world-kepler-cu118-gcc12", "torch", "--ignore-preflight", env=fresh)
    assert ignored.rc == 0 and "Steps:" in ignored.out
    assert "CUDA 11.8 accepts host gcc ≤ 11" in ignored.out.split("Plan:")[0]  # above the plan


def test_a_missing_toolkit_is_refused_by_plan_as_by_the_build(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    fresh = {"SRCBUILD_CACHE_DIR": str(tmp_path / "cache")}
    missing = ("--cuda-home", str(tmp_path / "no-cuda"))
    built = srcbuild_118.run("torch", "world-kepler-cu118", *missing, env=fresh)
    planned = srcbuild_118.run("plan", "world-kepler-cu118", "torch", *missing, env=fresh)
    assert built.rc == planned.rc == 4, planned.out
    assert "error: this machine cannot build recipe world-kepler-cu118: CUDA 11.8 (toolchain.cuda)" in planned.out
    assert _verdict(planned) == _verdict(built)
