"""The exit-code table is one contract for every command (srcbuild.errors, README's table).

Each case is a command's error path run in-process; with ``--json`` the failure is also the
JSON error object on stdout. Paths that need a real build or tool (5 step failed, 4 missing
tool, 130 interrupted) are checked by the integration tests of the build.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from srcbuild import errors
from srcbuild.cli import main

TESTS = Path(__file__).resolve().parents[1]
BAD = TESTS / "fixtures" / "recipes" / "bad"
COMBOS = TESTS / "fixtures" / "combos"
README = (TESTS.parent / "README.md").read_text()

CASES = [
    (["nonsense"], 2),
    (["recipes", "list", "--bogus"], 2),
    (["recipes", "show", "kepler-cu93"], 2),
    (["recipes", "check", str(BAD / "invalid-toml.toml")], 2),
    (["recipes", "check", str(COMBOS / "torch2-on-sm30.toml")], 3),
    (["recipes", "check", str(BAD / "invalid-toml.toml"), str(COMBOS / "torch2-on-sm30.toml")], 2),
    (["compat"], 2),
    (["compat", "--gpu", "GT 7500M"], 2),
    (["recommend", "--gpu", "GT 7500M"], 2),  # a name no GPU has: the same error in both commands
    (["compat", "--pci-id", "10de:0001"], 2),
    (["recommend", "--pci-id", "zz"], 2),
    (["recommend", "--lspci", "/nonexistent/lspci.txt"], 2),
    (["plan", "torch", "--recipe", "nope"], 2),
    (["plan", "torch"], 2),
    (["torch", "--recipe", str(BAD / "missing-tag.toml")], 2),
    (["torchvision", "--recipe", "nope"], 2),
    (["env", "show", "--recipe", "nope"], 2),
    (["lock", "--recipe", "nope"], 2),
    (["verify", "/nonexistent.whl"], 2),
    (["smoke", "--recipe", "kepler-cu92"], 9),
    (["install", "torch", "--recipe", "kepler-cu92", "--python", "/nonexistent/python"], 2),  # does not run
    (["cache", "show", "zzz"], 2),
    (["cache", "gc"], 2),
    (["cache", "push"], 2),
    (["cache", "pull", "--remote", "/nonexistent/remote"], 9),
    (["cache", "pull", "--remote", "http://127.0.0.1:1/"], 9),
    (["work", "clean"], 2),
    (["work", "clean", "--older-than", "a month"], 2),
    (["recipes", "new", "Bad Name", "--extends", "kepler-cu92"], 2),
    (["recipes", "new", "mine", "--extends", "nope"], 2),
    (["--config", "/nonexistent/srcbuild.toml", "recipes", "list"], 2),
]


def _case_id(value: object) -> str:
    return " ".join(Path(a).name if "/" in a else a for a in value) if isinstance(value, list) else str(value)


@pytest.mark.parametrize(("argv", "code"), CASES, ids=lambda v: _case_id(v))
def test_error_exit_code(argv: list[str], code: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert "error" in (err + out).lower()


@pytest.mark.parametrize(("argv", "code"), CASES, ids=lambda v: _case_id(v))
def test_json_error_object(argv: list[str], code: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--json"]) == code
    out, err = capsys.readouterr()
    data = json.loads(out)
    if argv[:2] == ["recipes", "check"]:  # its result is the per-recipe list, each with ok and error
        assert any(not r["ok"] and r["error"] for r in data)
        return
    assert data["ok"] is False and data["exit_code"] == code
    assert data["error"] and err.startswith("error: ")
    assert "hint" in data


def test_every_error_class_owns_a_code_in_the_readme_table() -> None:
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.SrcbuildError)]
    table = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", README, re.M))
    for cls in classes:
        if cls is errors.SrcbuildError:
            continue
        assert str(cls.exit_code) in table, f"{cls.__name__} exits {cls.exit_code}, which README does not list"
    assert set(table) - {"0"} == {str(c.exit_code) for c in classes if c is not errors.SrcbuildError}


# A name used by GPUs of different compute capabilities is answered, not refused: both commands
# give the answer for each GPU it may mean and the command that tells which one is installed.
AMBIGUOUS = ["GTX 860M", "GeForce GT 730"]


@pytest.mark.parametrize("name", AMBIGUOUS)
@pytest.mark.parametrize("command", ["compat", "recommend"])
def test_an_ambiguous_gpu_name_is_answered_by_both_commands_with_exit_0(
    command: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--gpu", name]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "lspci -nn | grep -i nvidia" in out
    assert main([command, "--gpu", name, "--json"]) == 0
    text = capsys.readouterr().out
    assert "error" not in json.loads(text) and "lspci -nn" in text
    assert "0 | success; also an answer for each GPU an ambiguous name (GTX 860M) may mean" in README
