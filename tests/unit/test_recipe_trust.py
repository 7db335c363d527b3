"""Recipes cannot inject: names that change what runs, hostile file names, and the override switch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.errors import RecipeError
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeLoader
from srcbuild.recipe.schema import changes_what_runs
from srcbuild.rules import check_recipe

BASE = """[torch]
tag = "v1.7.1"

[toolchain]
python = "3.8"
gcc = "7"
cuda = "9.2"

[gpu]
arch = ["3.0"]
"""


def _loader() -> RecipeLoader:
    paths = Paths.resolve(environ=os.environ)
    return RecipeLoader(paths.recipe_dirs, paths.patches_dirs)


@pytest.mark.parametrize(
    "name",
    ["PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONPATH", "PYTHONHOME", "BASH_ENV", "GIT_SSH_COMMAND",
     "CC", "CMAKE_CUDA_COMPILER_LAUNCHER", "CMAKE_TOOLCHAIN_FILE", "CMAKE_PROJECT_INCLUDE",
     "CMAKE_PROJECT_torch_INCLUDE_BEFORE", "CMAKE_CXX_COMPILER", "CMAKE_MODULE_PATH", "CMAKE_CXX_FLAGS",
     "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CCACHE_PREFIX", "GCONV_PATH", "PIP_CONFIG_FILE",
     "PIP_TRUSTED_HOST", "UV_INDEX_URL", "PERL5OPT", "XDG_CONFIG_HOME", "HOME", "USE_", "use_nccl"],
)  # fmt: skip
def test_variables_that_change_what_runs(name: str) -> None:
    assert changes_what_runs(name)


@pytest.mark.parametrize(
    "name",
    ["USE_NCCL", "BUILD_TEST", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "PYTHONHASHSEED", "CMAKE_BUILD_TYPE",
     "CMAKE_CUDA_ARCHITECTURES", "FORCE_CUDA", "TORCHVISION_USE_PNG"],
)  # fmt: skip
def test_build_variables_do_not_count(name: str) -> None:
    assert not changes_what_runs(name)


def test_allow_env_override_accepts_and_warns_naming_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "override.toml"
    path.write_text(
        BASE + '\n[build]\nallow_env_override = true\nenv = { LD_PRELOAD = "/opt/x.so", PATH = "/opt/bin", A = "1" }\n'
    )
    recipe = _loader().load(path)
    assert recipe.build.allow_env_override
    assert recipe.build.env_dict["LD_PRELOAD"] == "/opt/x.so"
    warnings = [f for f in check_recipe(recipe) if f.rule == "env-override"]
    assert [f.severity.value for f in warnings] == ["warning"]
    assert warnings[0].message.startswith("[build] env sets A, LD_PRELOAD, PATH, which are not build switches")
    monkeypatch.chdir(tmp_path)
    main(["recipes", "check", "override.toml"])
    assert "warning: [build] env sets A, LD_PRELOAD, PATH" in capsys.readouterr().out


def test_override_in_a_parent_is_refused_in_the_child_without_the_switch(tmp_path: Path) -> None:
    (tmp_path / "parent.toml").write_text(BASE + '\n[build]\nallow_env_override = true\nenv = { PATH = "/opt" }\n')
    (tmp_path / "child.toml").write_text('extends = "parent"\n[build]\nallow_env_override = false\n')
    assert _loader().load(tmp_path / "parent.toml").build.allow_env_override
    with pytest.raises(RecipeError) as info:
        _loader().load(tmp_path / "child.toml")
    assert f"child.toml: build.env (set in {tmp_path / 'parent.toml'}): PATH would change which programs run" in (
        info.value.message
    )


def test_a_file_name_with_a_newline_is_not_a_recipe_name(tmp_path: Path) -> None:
    path = tmp_path / "x\ntouch pwned.toml"
    path.write_text(BASE)
    with pytest.raises(RecipeError) as info:
        _loader().load(path)
    message = info.value.message
    assert "\n" not in message
    assert message.endswith(
        "x\\ntouch pwned.toml: the file name gives the recipe's name, and 'x\\ntouch pwned' is not a recipe name "
        "(lowercase letters, digits, '.', '_' and '-')"
    )
    assert info.value.hint == 'rename the file, or set name = "..." in it'


def test_a_file_name_with_a_newline_and_a_name_key_loads(tmp_path: Path) -> None:
    path = tmp_path / "x\ny.toml"
    path.write_text('name = "fine"\n' + BASE)
    assert _loader().load(path).name == "fine"


def test_recipes_check_refuses_the_issue_hostile_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "hostile.toml").write_text(BASE.replace('tag = "v1.7.1"', 'tag = "v1.7.1"\nrepo = "/x\\nid"'))
    monkeypatch.chdir(tmp_path)
    assert main(["recipes", "check", "hostile.toml"]) == 2  # an invalid recipe
    assert "torch.repo: '/x\\nid' holds a control character (U+000A)" in capsys.readouterr().out


BAD = Path(__file__).resolve().parent.parent / "fixtures" / "recipes" / "bad"


@pytest.mark.parametrize("name", ["nested-deep.toml", "extends-too-long.toml", "control-nul-env.toml"])
def test_former_internal_errors_are_recipe_errors_at_the_cli(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(BAD)
    for command in (["recipes", "show", name], ["recipes", "check", name]):
        code = main(command)
        captured = capsys.readouterr()
        assert code in (1, 2), captured
        assert "internal error" not in captured.err + captured.out
        assert f"{name}: " in captured.err + captured.out
