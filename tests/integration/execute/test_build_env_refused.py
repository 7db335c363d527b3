"""``[build] env`` cannot make CMake run a program: each variable an audit got through is refused
before anything runs, and the same value given to the fixture torch's real CMake build creates the
marker file it names, so the refusal is what keeps it out."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.execute.conftest import Srcbuild

pytestmark = pytest.mark.integration

FAKE_TORCH = Path(__file__).resolve().parents[2] / "worlds" / "fake_torch"


def _payloads(tmp: Path, marker: Path) -> dict[str, str]:
    """Each CMake variable with a value that creates ``marker`` when the fixture torch is built."""
    tool = tmp / "tool.sh"
    tool.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 0\n")
    tool.chmod(0o755)
    top = tmp / "top.cmake"
    top.write_text(f'file(TOUCH "{marker}")\n')
    compile_rule = "<CMAKE_C_COMPILER> <DEFINES> <INCLUDES> <FLAGS> -o <OBJECT> -c <SOURCE>"
    link_rule = (
        "<CMAKE_C_COMPILER> <CMAKE_SHARED_LIBRARY_C_FLAGS> <LINK_FLAGS> <CMAKE_SHARED_LIBRARY_CREATE_C_FLAGS> "
        "<SONAME_FLAG><TARGET_SONAME> -o <TARGET> <OBJECTS> <LINK_LIBRARIES>"
    )
    return {
        "CMAKE_C_CLANG_TIDY": str(tool),
        "CMAKE_C_INCLUDE_WHAT_YOU_USE": str(tool),
        "CMAKE_C_CPPCHECK": str(tool),
        "CMAKE_C_COMPILE_OBJECT": f"touch {marker} && {compile_rule}",
        "CMAKE_C_CREATE_SHARED_LIBRARY": f"touch {marker} && {link_rule}",
        "CMAKE_PROJECT_TOP_LEVEL_INCLUDES": str(top),
        "CMAKE_C_STANDARD_LIBRARIES": f"-lm && touch {marker}",
    }


# Refused as well, though the fixture torch (a C project with no executable and no CUDA language)
# gives them nothing to run: the rule for executables, CUDA's rules, and the search paths that
# choose which libraries and packages are found (a planted library runs when the wheel is imported).
NO_MARKER_HERE = {
    "CMAKE_C_LINK_EXECUTABLE": "touch /tmp/x && <CMAKE_C_COMPILER> <OBJECTS> -o <TARGET>",
    "CMAKE_CXX_LINK_EXECUTABLE": "touch /tmp/x",
    "CMAKE_CUDA_COMPILE_WHOLE_COMPILATION": "touch /tmp/x",
    "CMAKE_CXX_STANDARD_LIBRARIES": "-lm && touch /tmp/x",
    "CMAKE_CUDA_STANDARD_LIBRARIES": "-lm && touch /tmp/x",
    "CMAKE_CXX_CPPCHECK": "/tmp/x",
    "CMAKE_LIBRARY_PATH": "/tmp/evil/lib",
    "CMAKE_SYSTEM_PREFIX_PATH": "/tmp/evil",
}


def _cmake_build(source: Path, build: Path, name: str, value: str) -> None:
    """The fixture torch's CMake project, configured and built as its setup.py does (CPU only)."""
    subprocess.run(
        ["cmake", "-G", "Ninja", "-S", str(source), "-B", str(build), "-DUSE_CUDA=OFF", f"-D{name}={value}"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=False, capture_output=True)


def _hostile_recipe(srcbuild: Srcbuild, name: str, value: str, override: bool) -> str:
    recipe_name = f"hostile-{name.lower().replace('_', '-')}{'-allowed' if override else ''}"
    text = 'extends = "world-turing-cu130"\n[build]\n'
    text += "allow_env_override = true\n" if override else ""
    text += f"env = {{ {name} = {value!r} }}\n".replace("'", '"')
    argv = srcbuild.args("torch", recipe_name)
    Path(argv[argv.index("--recipe") + 1]).write_text(text)  # next to the world recipe it extends
    return recipe_name


@pytest.mark.parametrize("name", ["CMAKE_C_CLANG_TIDY", "CMAKE_C_INCLUDE_WHAT_YOU_USE", "CMAKE_C_CPPCHECK",
                                  "CMAKE_C_COMPILE_OBJECT", "CMAKE_C_CREATE_SHARED_LIBRARY",
                                  "CMAKE_PROJECT_TOP_LEVEL_INCLUDES", "CMAKE_C_STANDARD_LIBRARIES"])  # fmt: skip
def test_a_cmake_variable_that_runs_a_command_is_refused(srcbuild_130: Srcbuild, tmp_path: Path, name: str) -> None:
    marker = tmp_path / "ran"
    value = _payloads(tmp_path, marker)[name]
    # the fixture torch's own build runs it
    source = tmp_path / "src"
    shutil.copytree(FAKE_TORCH, source)
    _cmake_build(source, tmp_path / "b", name, value)
    assert marker.exists(), f"{name} did not run in the fixture build: the test would prove nothing"
    marker.unlink()
    # srcbuild refuses it before anything runs
    env = {"SRCBUILD_CACHE_DIR": str(tmp_path / "cache"), "SRCBUILD_WORK_DIR": str(tmp_path / "work")}
    ran = srcbuild_130.run("torch", _hostile_recipe(srcbuild_130, name, value, override=False), env=env)
    assert ran.rc == 2, ran.out
    assert f"build.env: {name} would change which programs run or what they load; refused unless [build] " in (
        " ".join(ran.out.split())
    )
    assert not marker.exists()
    assert not (tmp_path / "work" / "src").exists() and not list((tmp_path / "cache").rglob("*.whl"))


@pytest.mark.parametrize("name", sorted(NO_MARKER_HERE))
def test_cmake_rules_and_search_paths_are_refused(srcbuild_130: Srcbuild, tmp_path: Path, name: str) -> None:
    env = {"SRCBUILD_CACHE_DIR": str(tmp_path / "cache"), "SRCBUILD_WORK_DIR": str(tmp_path / "work")}
    ran = srcbuild_130.run("torch", _hostile_recipe(srcbuild_130, name, NO_MARKER_HERE[name], override=False), env=env)
    assert ran.rc == 2, ran.out
    assert f"build.env: {name} would change which programs run" in " ".join(ran.out.split())


def test_with_the_override_the_build_runs_it_and_says_so(srcbuild_130: Srcbuild, tmp_path: Path) -> None:
    """The switch is a real pass-through: what it lets in reaches CMake (so the refusal above is
    what stops it), and the build says so before it starts."""
    marker = tmp_path / "ran"
    name = "CMAKE_C_COMPILE_OBJECT"
    env = {"SRCBUILD_CACHE_DIR": str(tmp_path / "cache"), "SRCBUILD_WORK_DIR": str(tmp_path / "work")}
    ran = srcbuild_130.run(
        "torch", _hostile_recipe(srcbuild_130, name, _payloads(tmp_path, marker)[name], override=True), env=env
    )
    assert ran.rc == 0, ran.out
    assert marker.exists()
    flat = " ".join(ran.out.split())
    assert f"warning: [build] env sets {name}, which are not build switches" in flat
    assert os.path.exists(ran.last_line)
