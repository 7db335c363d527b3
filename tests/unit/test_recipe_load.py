"""Recipe parsing: every catalog recipe loads; every bad recipe gives its exact one-line error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.errors import RecipeError
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog, RecipeLoader

BAD = Path(__file__).resolve().parent.parent / "fixtures" / "recipes" / "bad"
BAD_CASES = sorted(p for p in BAD.glob("*.toml") if p.read_text().startswith("# expect: "))


def expected_message(path: Path) -> str:
    return path.read_text().splitlines()[0].removeprefix("# expect: ")


def test_there_are_at_least_twenty_bad_cases() -> None:
    assert len(BAD_CASES) >= 20


@pytest.mark.parametrize("path", BAD_CASES, ids=[p.stem for p in BAD_CASES])
def test_bad_recipe_gives_exact_one_line_error(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD)
    loader = RecipeLoader(Paths.resolve(environ=os.environ).recipe_dirs, Paths.resolve(environ=os.environ).patches_dirs)
    with pytest.raises(RecipeError) as info:
        loader.load(Path(path.name))
    message = info.value.message
    assert "\n" not in message
    assert message.startswith(expected_message(path))


@pytest.mark.parametrize("path", BAD_CASES[:5], ids=[p.stem for p in BAD_CASES[:5]])
def test_cli_reports_bad_recipe_without_traceback(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(BAD)
    assert main(["recipes", "show", path.name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {expected_message(path)}")
    assert "Traceback" not in err


def test_every_catalog_recipe_loads() -> None:
    catalog = RecipeCatalog(Paths.resolve(environ=os.environ))
    names = set(catalog.names())
    expected = {
        "kepler-cu92", "kepler-cu102", "kepler-k80-cu118", "maxwell-cu126", "pascal-cu126",
        "pascal-mx150-cu113", "kepler-cu92-mpi", "kepler-k80-cu118-mpi", "pascal-cu126-mpi",
    }  # fmt: skip
    assert expected <= names
    recipes, broken = catalog.scan()
    assert broken == []
    for recipe in recipes:
        assert recipe.name == recipe.path.stem  # type: ignore[union-attr]
        assert recipe.description


def test_extends_merges_tables_key_by_key() -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92-mpi")
    assert recipe.extends == ("kepler-cu92",)
    assert recipe.mpi.enabled and recipe.mpi.version == "4.0"
    assert recipe.toolchain.cuda == "9.2" and recipe.torch.tag == "v1.7.1"
    assert recipe.build.env_dict["USE_NCCL"] == "0"
    assert recipe.local_version() == "cu92.sm30.mpi"
    assert recipe.gpu.torch_cuda_arch_list == "3.0+PTX"


def test_two_level_extends_child_wins() -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("pascal-cu126-mpi")
    assert recipe.extends == ("pascal-cu126", "maxwell-cu126")
    assert [str(a) for a in recipe.gpu.arch] == ["6.0", "6.1"]
    assert recipe.description.startswith("Tesla P100")


def test_recipe_by_path_and_by_search_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.toml").write_text(
        'extends = "kepler-cu102"\ndescription = "my build"\n[gpu]\narch = ["3.0", "3.5"]\n'
    )
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    catalog = RecipeCatalog(Paths.resolve(environ=os.environ))
    by_name = catalog.load("mine")
    by_path = catalog.load(str(tmp_path / "mine.toml"))
    assert by_name == by_path
    assert by_name.gpu.torch_cuda_arch_list == "3.0;3.5+PTX"


def test_unknown_recipe_name_suggests_close_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recipes", "show", "kepler-cu93"]) == 2
    err = capsys.readouterr().err
    assert err == "error: no recipe named 'kepler-cu93'\nhint: did you mean 'kepler-cu92'?\n"


def test_recipes_check_fails_on_a_bad_file(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(BAD)
    assert main(["recipes", "check", "kepler-cu92", "typo-top.toml"]) == 2
    out = capsys.readouterr().out
    assert "ok     kepler-cu92" in out
    assert "typo-top.toml: toolchian: unknown key (did you mean 'toolchain'?)" in out


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "srcbuild, version" in capsys.readouterr().out
    assert main(["recipes", "list", "--help"]) == 0
