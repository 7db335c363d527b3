"""``[build] env`` is an allowlist written out as data; ``env.pip`` takes names and versions and
``env.channels`` https and file URLs only; everything else needs ``allow_env_override``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srcbuild.errors import RecipeError
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeLoader
from srcbuild.recipe.schema import BUILD_ENV_DATA, build_env_allowlist, changes_what_runs
from srcbuild.tables import read_data_file

BASE = """[torch]
tag = "v1.7.1"

[toolchain]
python = "3.8"
gcc = "7"
cuda = "9.2"

[gpu]
arch = ["3.0"]
"""

# The CMake variables an audit got through [build] env, each of which runs a program, a script or
# a shell command, or chooses what is linked (cmake-variables(7)).
CMAKE_CODE_VARIABLES = [
    "CMAKE_C_CLANG_TIDY", "CMAKE_CXX_CLANG_TIDY", "CMAKE_CUDA_CLANG_TIDY", "CMAKE_C_INCLUDE_WHAT_YOU_USE",
    "CMAKE_CXX_INCLUDE_WHAT_YOU_USE", "CMAKE_C_COMPILE_OBJECT", "CMAKE_CXX_COMPILE_OBJECT",
    "CMAKE_CUDA_COMPILE_OBJECT", "CMAKE_C_CREATE_SHARED_LIBRARY", "CMAKE_CXX_CREATE_SHARED_LIBRARY",
    "CMAKE_PROJECT_TOP_LEVEL_INCLUDES", "CMAKE_C_CPPCHECK", "CMAKE_CXX_CPPCHECK", "CMAKE_C_LINK_EXECUTABLE",
    "CMAKE_CXX_LINK_EXECUTABLE", "CMAKE_CUDA_LINK_EXECUTABLE", "CMAKE_CUDA_COMPILE_WHOLE_COMPILATION",
    "CMAKE_C_STANDARD_LIBRARIES", "CMAKE_CXX_STANDARD_LIBRARIES", "CMAKE_CUDA_STANDARD_LIBRARIES",
    "CMAKE_LIBRARY_PATH", "CMAKE_SYSTEM_PREFIX_PATH", "CMAKE_C_CREATE_SHARED_MODULE", "CMAKE_C_ARCHIVE_CREATE",
    "CMAKE_C_LINKER_LAUNCHER", "CMAKE_EXPORT_COMPILE_COMMANDS_X", "CMAKE_INCLUDE_PATH", "CMAKE_PROGRAM_PATH",
    "CMAKE_SYSTEM_PROGRAM_PATH", "CMAKE_FIND_USE_PACKAGE_REGISTRY", "CMAKE_CUDA_HOST_COMPILER",
    "CMAKE_C_COMPILER_LAUNCHER", "CMAKE_TOOLCHAIN_FILE", "CMAKE_PROJECT_INCLUDE", "CMAKE_MODULE_PATH",
    "CMAKE_C_FLAGS", "CMAKE_SHARED_LINKER_FLAGS", "CMAKE_INSTALL_PREFIX", "CMAKE_USER_MAKE_RULES_OVERRIDE",
]  # fmt: skip


def _loader() -> RecipeLoader:
    paths = Paths.resolve(environ=os.environ)
    return RecipeLoader(paths.recipe_dirs, paths.patches_dirs)


def _recipe(tmp_path: Path, build: str = "", env: str = "") -> Path:
    path = tmp_path / "r.toml"
    path.write_text(BASE + (f"\n[build]\n{build}\n" if build else "") + (f"\n[env]\n{env}\n" if env else ""))
    return path


@pytest.mark.parametrize("name", CMAKE_CODE_VARIABLES)
def test_each_cmake_variable_that_runs_code_is_refused(tmp_path: Path, name: str) -> None:
    assert changes_what_runs(name)
    with pytest.raises(RecipeError) as info:
        _loader().load(_recipe(tmp_path, f'env = {{ {name} = "/tmp/x" }}'))
    assert info.value.message.endswith(
        f"r.toml: build.env: {name} would change which programs run or what they load; "
        "refused unless [build] allow_env_override = true"
    )
    assert "build_env.toml" in (info.value.hint or "")
    recipe = _loader().load(_recipe(tmp_path, f'allow_env_override = true\nenv = {{ {name} = "/tmp/x" }}'))
    assert recipe.build.env_dict == {name: "/tmp/x"}


def test_every_listed_name_has_a_kind_and_a_source() -> None:
    data = read_data_file(BUILD_ENV_DATA, shipped=False)
    for group in data["names"] + data["switches"]:
        assert group["source"].strip(), group
    assert {g["kind"] for g in data["names"]} <= {"switch", "count", "word"}
    allow = build_env_allowlist()
    # the documented build switches of the catalog and the extensions table
    for name in ("USE_NCCL", "BUILD_TEST", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "CMAKE_BUILD_TYPE",
                 "CMAKE_POLICY_VERSION_MINIMUM", "FORCE_CUDA", "FORCE_ONLY_CPU", "MMCV_WITH_OPS",
                 "TORCHVISION_USE_PNG", "PYTORCH_BUILD_VERSION"):  # fmt: skip
        assert allow.kind(name) is not None, name
    # a prefix alone, lowercase, or a switch family's prefix without a name is not a switch
    for name in ("USE_", "use_nccl", "BUILD_", "TORCHVISION_USE_", "TORCHVISION_INCLUDE", "TORCH_NVCC_FLAGS"):
        assert allow.kind(name) is None, name


@pytest.mark.parametrize(
    ("name", "value", "ok"),
    [("USE_NCCL", "0", True), ("USE_NCCL", "off", True), ("BUILD_TEST", "TRUE", True),
     ("USE_NCCL", "$(touch /tmp/x)", False), ("USE_FOO", "/opt/lib", False), ("MAX_JOBS", "4", True),
     ("MAX_JOBS", "4; touch x", False), ("MAX_JOBS", "٤", False), ("TORCH_CUDA_ARCH_LIST", "3.7;5.0+PTX", True),
     ("TORCH_CUDA_ARCH_LIST", "3.7 -ccbin=/tmp/x", False), ("CMAKE_BUILD_TYPE", "Release", True),
     ("CMAKE_BUILD_TYPE", "Release -DX=1", False), ("CMAKE_POLICY_VERSION_MINIMUM", "3.5", True),
     ("CMAKE_CUDA_ARCHITECTURES", "/tmp", False), ("SOURCE_DATE_EPOCH", "1700000000", True)],
)  # fmt: skip
def test_a_listed_name_takes_only_its_kind_of_value(tmp_path: Path, name: str, value: str, ok: bool) -> None:
    assert changes_what_runs(name, value) is not ok
    path = _recipe(tmp_path, f"env = {{ {name} = {value!r} }}".replace("'", '"'))
    if ok:
        assert _loader().load(path).build.env_dict == {name: value}
        return
    with pytest.raises(RecipeError) as info:
        _loader().load(path)
    assert f"build.env: {name} takes " in info.value.message
    assert info.value.message.endswith("refused unless [build] allow_env_override = true")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii", exclude_characters="\x00"), max_size=40))
def test_no_switch_value_holds_a_path_a_space_or_a_shell_character(value: str) -> None:
    for name in ("USE_NCCL", "MAX_JOBS", "TORCH_CUDA_ARCH_LIST", "CMAKE_BUILD_TYPE"):
        if not changes_what_runs(name, value):
            assert not set(value) & set("/ \t$`&|<>()'\"\\=*?~{}[]!#\n\r")


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"CMAKE_[A-Z0-9_]{1,30}", fullmatch=True))
def test_no_cmake_variable_is_allowed_unless_it_is_listed(name: str) -> None:
    assert changes_what_runs(name) is (name not in build_env_allowlist().names)


@pytest.mark.parametrize(
    "entry",
    ["torch-scatter @ https://evil.example/x.whl", "ninja @ file:///tmp/ninja.whl",
     "pkg@git+https://example.invalid/pkg"],
)  # fmt: skip
def test_a_pip_direct_reference_needs_the_override(tmp_path: Path, entry: str) -> None:
    path = _recipe(tmp_path, env=f"pip = [{entry!r}]".replace("'", '"'))
    with pytest.raises(RecipeError) as info:
        _loader().load(path)
    assert info.value.message.endswith(
        f"r.toml: env.pip[0]: {entry!r} is a direct reference: pip would download it from that URL instead "
        "of the package index; refused unless [build] allow_env_override = true"
    )
    path.write_text(path.read_text() + "\n[build]\nallow_env_override = true\n")
    assert _loader().load(path).env.pip == (entry,)


def test_pip_names_and_versions_load(tmp_path: Path) -> None:
    path = _recipe(tmp_path, env='pip = ["ninja>=1.10", "numpy[dev]==1.26.4; python_version < \'3.12\'"]')
    assert len(_loader().load(path).env.pip) == 2


@pytest.mark.parametrize(
    ("entry", "ok"),
    [("conda-forge", True), ("https://conda.example/forge", True), ("file:///srv/channel", True),
     ("http://conda.example/forge", False), ("HTTP://conda.example/forge", False), ("ftp://x/y", False)],
)  # fmt: skip
def test_channels_are_names_https_or_file(tmp_path: Path, entry: str, ok: bool) -> None:
    path = _recipe(tmp_path, env=f'channels = ["{entry}"]')
    if ok:
        assert _loader().load(path).env.channels == (entry,)
        return
    with pytest.raises(RecipeError) as info:
        _loader().load(path)
    assert info.value.message.startswith(f"{path}: env.channels[0]: {entry!r} is ") or "env.channels[0]" in (
        info.value.message
    )


@pytest.mark.parametrize(
    ("entry", "ok"),
    [("numpy", True), ("conda-forge::numpy=1.26", True), ("https://conda.example/forge::numpy", True),
     ("http://conda.example/forge::numpy", False), ("ftp://x/y::numpy", False)],
)  # fmt: skip
def test_a_conda_spec_channel_follows_the_channel_rule(tmp_path: Path, entry: str, ok: bool) -> None:
    path = _recipe(tmp_path, env=f'conda = ["{entry}"]')
    if ok:
        assert _loader().load(path).env.conda == (entry,)
        return
    with pytest.raises(RecipeError) as info:
        _loader().load(path)
    assert "env.conda[0]: " in info.value.message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii", min_codepoint=0x20, max_codepoint=0x7E), max_size=60))
def test_no_pip_entry_that_loads_names_a_url(entry: str) -> None:
    from packaging.requirements import Requirement

    from srcbuild.recipe.envcheck import check_env_entries

    try:
        (checked,) = check_env_entries([entry], "env.pip", "r.toml")
    except RecipeError as exc:
        assert exc.message.startswith("r.toml: env.pip[0]: ")
        return
    assert Requirement(checked.strip()).url is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii", min_codepoint=0x20, max_codepoint=0x7E), max_size=60))
def test_no_channel_or_conda_spec_that_loads_is_plain_http(entry: str) -> None:
    from srcbuild.recipe.envcheck import check_env_entries

    for field in ("env.channels", "env.conda"):
        try:
            (checked,) = check_env_entries([entry], field, "r.toml")
        except RecipeError:
            continue
        channel = checked.strip().split("::", 1)[0] if field == "env.conda" and "::" in checked else checked.strip()
        assert not channel.lower().startswith("http://")
