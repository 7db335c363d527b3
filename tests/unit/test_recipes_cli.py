"""``srcbuild recipes list`` fits 80 columns and names GPUs; a broken recipe in the search path
fails only the commands that name it, and ``recipes list`` shows it with its error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srcbuild.cli import main

BROKEN = 'name = "broken-one"\n[torch]\ntagg = "v1.7.1"\n'
MINE = 'extends = "kepler-cu92"\ndescription = "GTX 680 (Kepler, compute capability 3.0)"\n'


@pytest.fixture
def broken_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "broken-one.toml").write_text(BROKEN)
    (tmp_path / "mine.toml").write_text(MINE)
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    return tmp_path


def test_recipes_list_fits_80_columns_and_names_gpus(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["recipes", "list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    assert all(line == line.rstrip() and "─" not in line for line in out.splitlines())  # plain lines to a pipe
    first = next(line for line in out.splitlines() if line.startswith("kepler-cu92 "))
    assert first.split()[:3] == ["kepler-cu92", "3.0:", "GeForce"]
    assert "750M" in out
    assert "torch 1.7.1" in first and "CUDA 9.2" in first


def test_a_broken_recipe_is_listed_with_its_error(broken_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recipes", "list"]) == 0
    out = capsys.readouterr().out
    assert "\nmine " in out and "\nkepler-cu92 " in out
    broken = out[out.index("broken  broken-one: ") :]
    assert "torch.tagg: unknown key (did you mean 'tag'?)" in " ".join(broken.split())
    assert main(["recipes", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    bad = [r for r in rows if not r["ok"]]
    assert [r["name"] for r in bad] == ["broken-one"] and "torch.tagg" in bad[0]["error"]


def test_a_broken_recipe_fails_only_commands_that_name_it(
    broken_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recipes", "check", "mine"]) == 0
    assert main(["recipes", "show", "kepler-cu92"]) == 0
    assert main(["recommend", "--gpu", "GT 750M"]) == 0
    assert main(["compat", "--arch", "3.0", "--json"]) == 0
    assert "broken-one" not in capsys.readouterr().err
    assert main(["recipes", "show", "broken-one"]) == 2
    assert "torch.tagg: unknown key" in capsys.readouterr().err
    assert main(["recipes", "check"]) == 2  # all of them, the broken one included
