"""``srcbuild plan`` names every ``[build] env`` variable that only ``allow_env_override`` lets in."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.cli import main

pytestmark = pytest.mark.integration


def test_plan_names_each_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ov.toml"
    path.write_text(
        'extends = "pascal-cu126"\n[build]\nallow_env_override = true\n'
        'env = { CMAKE_C_CLANG_TIDY = "/opt/tidy", USE_NCCL = "0" }\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SRCBUILD_WORK_DIR", str(tmp_path / "w"))
    monkeypatch.setenv("SRCBUILD_CACHE_DIR", str(tmp_path / "c"))
    assert main(["plan", "torch", "--recipe", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning: [build] env sets CMAKE_C_CLANG_TIDY, which are not build switches" in " ".join(out.split())
    flat = " ".join(out.split())  # the plan wraps at 80 columns
    note = "recipe [build.env], allowed by allow_env_override = true: not a build switch"
    assert f"CMAKE_C_CLANG_TIDY=/opt/tidy # {note}" in flat
    assert "USE_NCCL=0 # recipe [build.env]: no NCCL" in flat
