"""srcbuild.toml: keys become environment defaults for one command; command line > environment >
file > default; unknown keys and wrong types are one-line errors; plan names the file as origin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild import config
from srcbuild.cli import main
from srcbuild.errors import UsageError


def test_keys_become_variables() -> None:
    text = 'work_dir = "~/w"\nmirrors = ["gitee", "https://a/=https://b/"]\ncompiler_cache = "none"\n'
    assert config.parse_config(text, "s.toml") == {
        "SRCBUILD_WORK_DIR": str(Path("~/w").expanduser()),
        "SRCBUILD_MIRROR": "gitee,https://a/=https://b/",
        "SRCBUILD_COMPILER_CACHE": "none",
    }


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("mirorrs = []", "s.toml: unknown key 'mirorrs'", "did you mean 'mirrors'?"),
        (
            "keep_build = 1",
            "s.toml: keep_build must be true or false, not 1",
            "write it like: keep_build = true",
        ),
        ("work_dir = [", "s.toml: invalid TOML", "fix the file, or move it aside: mv s.toml s.toml.bak"),
    ],
)
def test_bad_files_are_one_line_errors(text: str, message: str, hint: str) -> None:
    with pytest.raises(UsageError) as info:
        config.parse_config(text, "s.toml")
    assert info.value.message.startswith(message) and info.value.hint == hint


def test_environment_wins_over_the_file_and_origin_names_it(tmp_path: Path) -> None:
    file = tmp_path / "srcbuild.toml"
    file.write_text('mirrors = ["gitee"]\nenv_backend = "rattler"\n')
    env = {"SRCBUILD_ENV_BACKEND": "venv"}
    with config.configured(str(file), env):
        assert env["SRCBUILD_MIRROR"] == "gitee" and env["SRCBUILD_ENV_BACKEND"] == "venv"
        assert config.origin(env, "SRCBUILD_MIRROR") == f"config file {file} (mirrors)"
        assert config.origin(env, "SRCBUILD_ENV_BACKEND") == "environment SRCBUILD_ENV_BACKEND"
    assert env == {"SRCBUILD_ENV_BACKEND": "venv"}  # restored


def test_the_user_file_is_read_and_a_missing_explicit_file_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = config.default_config_path()
    user.parent.mkdir(parents=True)
    recipes = tmp_path / "mine"
    recipes.mkdir()
    (recipes / "mine.toml").write_text('extends = "kepler-cu92"\n')
    user.write_text(f'recipes_path = ["{recipes}"]\n')
    assert main(["recipes", "show", "mine"]) == 0
    assert "SRCBUILD_RECIPES_PATH" not in os.environ  # one command only
    assert main(["--config", str(tmp_path / "nope.toml"), "recipes", "list"]) == 2
    assert "--config " in capsys.readouterr().err


def test_readme_example_is_a_valid_config_with_every_key() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    example = readme.split("```toml\nwork_dir = ")[1].split("```")[0]
    variables = config.parse_config("work_dir = " + example, "README.md")
    keys_shown = {line.split(" = ")[0] for line in ("work_dir = " + example).splitlines() if " = " in line}
    assert keys_shown | {"patches_path"} == set(config.KEYS)
    assert variables["SRCBUILD_MIRROR"] == "gitee"
