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


def test_the_data_says_when_it_was_checked_and_what_it_holds() -> None:
    assert load_knowledge().checked == "2026-11-24"
    assert load_knowledge().newest_known_torch == "2.15.0"


def test_compat_and_recommend_print_the_date(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", "--arch", "6.1"]) == 0
    line = "knowledge last checked: 2026-11-24 (newest torch it knows: 2.15.0)"
    assert line.capitalize() in capsys.readouterr().out.splitlines()
    assert main(["recommend", "--pci-id", "10de:1d10"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == line
    assert main(["compat", "--arch", "6.1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["knowledge_checked"], data["knowledge_newest_torch"]) == ("2026-11-24", "2.15.0")


def test_a_recipe_newer_than_the_knowledge_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(COMBOS / "torch-newer-than-knowledge.toml", tmp_path)
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    assert main(["recommend", "--pci-id", "10de:1380", "--json"]) == 0  # GTX 750 Ti, 5.0
    (gpu,) = json.loads(capsys.readouterr().out)["gpus"]
    (fit,) = [r for r in gpu["recipes"] if r["recipe"] == "torch-newer-than-knowledge"]
    assert fit["notes"][-2:] == [
        "warning: torch v2.16.0 is newer than srcbuild's knowledge (last checked 2026-11-24), which ends at "
        "v2.15.0; its toolchain ranges are not checked.",
        "warning: torchvision v0.30.0 is newer than srcbuild's knowledge (last checked 2026-11-24), which ends at "
        "v0.29.2; its toolchain ranges are not checked.",
    ]
