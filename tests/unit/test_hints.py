"""Hints that say "continue with" or "rerun" are the user's own command line, made pasteable."""

from __future__ import annotations

import os
from pathlib import Path

from srcbuild.cli.common import exact_hint, resume_command
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.recipe.catalog import recipe_argument

ARGV = [
    "torch",
    "--recipe",
    "my recipes/k80.toml",
    "--mirror",
    "https://github.com/=file:///srv/m/",
    "--env",
    "/opt/env",
    "--work-dir",
    "/scratch/w",
    "--cache-dir",
    "/scratch/c",
]
EXACT = (
    "srcbuild torch --recipe 'my recipes/k80.toml' --mirror https://github.com/=file:///srv/m/ "
    "--env /opt/env --work-dir /scratch/w --cache-dir /scratch/c --resume"
)


def test_resume_command_keeps_every_option_as_given_and_quotes() -> None:
    assert resume_command(ARGV) == EXACT
    assert resume_command([*ARGV, "--resume", "--json"]) == EXACT


def test_nothing_to_resume_hint_is_the_command_without_resume() -> None:
    fresh = resume_command([*ARGV, "--resume"], resume=False)
    assert fresh == EXACT.removesuffix(" --resume")
    hint = exact_hint("run the same command without --resume", EXACT, fresh)
    assert hint == f"run it without --resume: {fresh}"


def test_interrupted_hint_becomes_the_exact_command() -> None:
    hint = "continue with: srcbuild torch --recipe k80 --resume"
    assert exact_hint(hint, EXACT) == f"continue with: {EXACT}"


def test_failed_step_hint_becomes_the_exact_command() -> None:
    hint = "run fewer compile jobs at once; then rerun with --resume to continue from this step"
    assert exact_hint(hint, EXACT) == f"run fewer compile jobs at once; then continue with: {EXACT}"
    assert exact_hint(None, EXACT) is None


def test_recipe_argument_is_the_name_in_the_catalog_else_the_path(tmp_path: Path) -> None:
    paths = Paths.resolve(environ=os.environ)
    assert recipe_argument(RecipeCatalog(paths).load("kepler-cu92"), paths) == "kepler-cu92"
    mine = tmp_path / "kepler cu92.toml"
    mine.write_text('name = "kepler-cu92"\nextends = "kepler-cu92"\n')
    assert recipe_argument(RecipeCatalog(paths).load(str(mine)), paths) == f"'{mine}'"


def test_venv_hint_names_the_recipes_python(tmp_path: Path) -> None:
    import pytest

    from srcbuild.cache.install import target_python
    from srcbuild.errors import UsageError

    with pytest.raises(UsageError) as info:
        target_python(str(tmp_path / "my env"), None, {}, version="3.12")
    assert info.value.hint == (
        f"make one with Python 3.12: srcbuild env runtime --python 3.12 --into '{tmp_path / 'my env'}' "
        "(or add --create to this command); or pass --python"
    )


def test_an_interrupt_names_the_command_that_continues_it() -> None:
    from srcbuild.cli import continue_hint

    assert continue_hint(["toolchain", "install", "cudnn", "9.10", "--cuda", "12.6"]) == (
        "continue with: srcbuild toolchain install cudnn 9.10 --cuda 12.6"  # no --resume: it has none
    )
    assert continue_hint(["-q", *ARGV, "--json"]) == f"continue with: {EXACT.replace('srcbuild ', 'srcbuild -q ', 1)}"
    assert continue_hint(["ext", "torch-scatter==2.1.2", "--recipe", "k80"]) == (
        "continue with: srcbuild ext torch-scatter==2.1.2 --recipe k80 --resume"
    )


def test_ctrl_c_anywhere_prints_the_continuing_command(monkeypatch, capsys) -> None:
    from srcbuild import cli

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.cli, "main", interrupted)
    assert cli.main(["toolchain", "install", "cuda", "11.8"]) == 130
    assert capsys.readouterr().err.splitlines() == [
        "error: interrupted",
        "hint: continue with: srcbuild toolchain install cuda 11.8",
    ]
