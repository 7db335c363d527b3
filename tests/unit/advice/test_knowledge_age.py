"""How old the knowledge is: compat and recommend print the date it was last checked, and a recipe
pinning a release newer than it carries a warning."""

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path

import pytest

from srcbuild.advice.doctor import diagnose
from srcbuild.advice.render import render_doctor
from srcbuild.cli import main
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from tests.unit.host.test_host_doctor_render import K80_BOX

COMBOS = Path(__file__).resolve().parents[2] / "fixtures" / "combos"


def test_the_data_says_when_it_was_checked_and_what_it_holds() -> None:
    assert load_knowledge().checked == "2026-11-28"
    assert load_knowledge().newest_known_torch == "2.15.0"


def test_compat_and_recommend_print_the_date(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", "--arch", "6.1"]) == 0
    line = "knowledge last checked: 2026-11-28 (newest torch it knows: 2.15.0)"
    assert line.capitalize() in capsys.readouterr().out.splitlines()
    assert main(["recommend", "--pci-id", "10de:1d10"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith(line + "; newest on")
    assert main(["compat", "--arch", "6.1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["knowledge_checked"], data["knowledge_newest_torch"]) == ("2026-11-28", "2.15.0")


def test_a_recipe_newer_than_the_knowledge_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(COMBOS / "torch-newer-than-knowledge.toml", tmp_path)
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    assert main(["recommend", "--pci-id", "10de:1380", "--json"]) == 0  # GTX 750 Ti, 5.0
    (gpu,) = json.loads(capsys.readouterr().out)["gpus"]
    (fit,) = [r for r in gpu["recipes"] if r["recipe"] == "torch-newer-than-knowledge"]
    assert fit["notes"][-2:] == [
        "warning: torch v2.16.0 is newer than srcbuild's knowledge (last checked 2026-11-28), which ends at "
        "v2.15.0; its toolchain ranges are not checked.",
        "warning: torchvision v0.30.0 is newer than srcbuild's knowledge (last checked 2026-11-28), which ends at "
        "v0.29.2; its toolchain ranges are not checked.",
    ]


SEEN = "torch 2.15.0, torchvision 0.29.2, torchaudio 2.11.1, CUDA 13.5.37, cuDNN 9.28.1.4, NCCL 2.32.3"


def test_the_last_check_names_the_newest_release_of_each_tracked_project(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_knowledge().newest_seen == SEEN
    assert main(["recommend", "--pci-id", "10de:1d10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["knowledge_newest_seen"] == SEEN


def test_knowledge_older_than_60_days_is_called_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped data with its dates set back a year: doctor, recommend and compat say so."""
    from srcbuild import tables

    data = tmp_path / "data"
    shutil.copytree(tables.DATA_DIR, data)
    for name in ("capabilities", "index"):
        path = data / f"{name}.toml"
        path.write_text(path.read_text().replace('checked = "2026-11-28"', 'checked = "2025-11-28"')
                        .replace('checked = "2026-11-24"', 'checked = "2025-11-24"'))
    assert load_knowledge().stale_note(datetime.date(2026, 12, 1)) == ""
    assert load_knowledge().stale_note(datetime.date(2027, 1, 27)) == ""  # 60 days: not older than 60
    assert load_knowledge().stale_note(datetime.date(2027, 1, 28)).startswith("the knowledge is 61 days old")
    load_knowledge.cache_clear()
    monkeypatch.setattr(tables, "DATA_DIR", data)
    try:
        assert load_knowledge().checked == "2025-11-28"
        assert main(["recommend", "--pci-id", "10de:1d10", "--json"]) == 0
        stale = json.loads(capsys.readouterr().out)["knowledge_stale"]
        assert stale.startswith("the knowledge is ") and "days old (last checked 2025-11-28)" in stale
        assert stale.endswith("srcbuild knowledge refresh --dry-run")
        assert main(["recommend", "--pci-id", "10de:1d10"]) == 0
        assert "warning: the knowledge is " in capsys.readouterr().out
        report = diagnose(load_knowledge(), K80_BOX, (), Paths.resolve(environ=os.environ))
        assert report.stale == stale and report.to_json()["knowledge_stale"] == stale
        assert "\nwarning: the knowledge is " in render_doctor(report)
        assert main(["compat", "--arch", "6.1"]) == 0
        assert "Warning: the knowledge is " in capsys.readouterr().out
    finally:
        monkeypatch.undo()
        load_knowledge.cache_clear()
