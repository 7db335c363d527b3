"""A recipe cannot make srcbuild read without bound: file size and ``extends`` depth are capped,
each with one line naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.errors import RecipeError
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeLoader
from srcbuild.recipe.load import MAX_EXTENDS_DEPTH, MAX_RECIPE_BYTES

BASE = '[torch]\ntag = "v1.7.1"\n\n[toolchain]\npython = "3.8"\ngcc = "7"\ncuda = "9.2"\n\n[gpu]\narch = ["3.0"]\n'


def _loader() -> RecipeLoader:
    paths = Paths.resolve(environ=os.environ)
    return RecipeLoader(paths.recipe_dirs, paths.patches_dirs)


def test_a_chain_of_a_thousand_parents_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r0.toml").write_text(BASE)
    for i in range(1, 1000):
        (tmp_path / f"r{i}.toml").write_text(f'extends = "r{i - 1}"\n')
    with pytest.raises(RecipeError) as info:
        _loader().load(tmp_path / "r999.toml")
    assert info.value.message.endswith(
        f"r999.toml: extends: more than {MAX_EXTENDS_DEPTH} recipes deep (stopped at "
        f"{tmp_path / 'r968.toml'}, which extends 'r967')"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["recipes", "check", "./r999.toml"]) == 2
    assert "extends: more than 32 recipes deep" in capsys.readouterr().out
    # a chain within the cap loads
    assert _loader().load(tmp_path / f"r{MAX_EXTENDS_DEPTH - 1}.toml").torch.tag == "v1.7.1"


def test_a_recipe_larger_than_the_cap_is_not_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    with path.open("w") as f:
        f.write(BASE)
        f.write("# padding\n" * (MAX_RECIPE_BYTES // 10 + 1))
    with pytest.raises(RecipeError) as info:
        _loader().load(path)
    assert info.value.message == f"{path}: the file is larger than 1024 KiB; a recipe is a few KiB of TOML"
    path.write_text(BASE + "# padding\n" * 1000)
    assert _loader().load(path).torch.tag == "v1.7.1"
