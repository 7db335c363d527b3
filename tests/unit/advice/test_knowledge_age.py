"""How old the knowledge is: compat and recommend print the date it was last checked, and a recipe
pinning a release newer than it carries a warning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.knowledge import load_knowledge

COMBOS = Path(__file__).resolve().parents[2] / "fixtures" / "combos"


def test_the_data_says_when_it_was_checked() -> None:
    assert load_knowledge().checked == "2026-11-23"


def test_compat_and_recommend_print_the_date(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", "--arch", "6.1"]) == 0
    assert "Knowledge last checked: 2026-11-23" in capsys.readouterr().out.splitlines()
    assert main(["recommend", "--pci-id", "10de:1d10"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "knowledge last checked: 2026-11-23"
    assert main(["compat", "--arch", "6.1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["knowledge_checked"] == "2026-11-23"


def test_a_recipe_newer_than_the_knowledge_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(COMBOS / "torch-newer-than-knowledge.toml", tmp_path)
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    assert main(["recommend", "--pci-id", "10de:1380", "--json"]) == 0  # GTX 750 Ti, 5.0
    (gpu,) = json.loads(capsys.readouterr().out)["gpus"]
    (fit,) = [r for r in gpu["recipes"] if r["recipe"] == "torch-newer-than-knowledge"]
    assert fit["notes"][-2:] == [
        "warning: torch v2.14.0 is newer than srcbuild's knowledge (last checked 2026-11-23), which ends at "
        "v2.13.0; its toolchain ranges are not checked.",
        "warning: torchvision v0.29.0 is newer than srcbuild's knowledge (last checked 2026-11-23), which ends at "
        "v0.28.0; its toolchain ranges are not checked.",
    ]
