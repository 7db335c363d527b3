"""A build whose environment is a venv of the host Python: a missing Python.h is said by `plan`
and preflight at once, naming the package, not by a compiler minutes into the build."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import pytest

from srcbuild.cli import main

pytestmark = pytest.mark.integration


def test_plan_says_the_host_python_lacks_its_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    version = "{}.{}".format(*sys.version_info[:2])
    recipe = tmp_path / "cpu-here.toml"  # the Python running srcbuild: a venv of it builds
    recipe.write_text(f'extends = "cpu"\n[toolchain]\npython = "{version}"\n')
    real = sysconfig.get_path
    monkeypatch.setattr(
        sysconfig,
        "get_path",
        lambda name, *a, **k: str(tmp_path / "none") if name == "include" else real(name, *a, **k),
    )
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["plan", "torch", "--recipe", str(recipe), "--env-backend", "venv"])
    out = capsys.readouterr().err
    assert code == 4  # plan refuses what the build would refuse: the host lacks a piece (exit 4)
    assert f"Python {version}'s headers are not installed ({tmp_path / 'none'}/Python.h is missing)" in out
    assert main(["plan", "torch", "--recipe", str(recipe), "--env-backend", "rattler"]) == 0
    assert "headers are not installed" not in capsys.readouterr().out  # conda's Python brings its own
