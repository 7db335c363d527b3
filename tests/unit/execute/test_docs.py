"""docs/building.md stays true: every option of the build commands and every failure signature."""

from __future__ import annotations

from pathlib import Path

from srcbuild.cli.build import package_command
from srcbuild.cli.plan import plan_command
from srcbuild.execute.diagnose import SIGNATURES

DOC = (Path(__file__).resolve().parents[3] / "docs" / "building.md").read_text()


def test_every_option_is_documented() -> None:
    for command in (package_command("torch"), plan_command):
        for param in command.params:
            for opt in getattr(param, "opts", ()):
                if opt.startswith("--") and opt not in ("--recipe", "--format", "--help"):
                    assert f"`{opt}" in DOC, f"{opt} is not in docs/building.md"


def test_every_failure_signature_is_documented() -> None:
    table = DOC.split("## When a build fails")[1].split("##")[0]
    assert len(SIGNATURES) == table.count("\n| ") - 1  # minus the header row
