"""An official wheel's answer names the Python to make when the machine has none it supports."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from srcbuild.advice.python import python_to_make
from srcbuild.advice.recommend import recommend
from srcbuild.advice.render import render_recommendation
from srcbuild.advice.window import OfficialWheel
from srcbuild.envs.runtime import pythons_here
from srcbuild.host.identify import identify_name
from srcbuild.knowledge import load_knowledge

PIP = "pip install torch==1.3.0+cu101 torchvision==0.4.1+cu101 -f https://download.pytorch.org/whl/torch_stable.html"
WHEEL = OfficialWheel("1.3.0", "cu101", "3.0", python="3.5 to 3.7", python_min="3.5", python_max="3.7", pip=PIP)


def test_none_of_the_machines_pythons_runs_the_wheel() -> None:
    make = python_to_make(WHEEL, frozenset({"3.11", "3.12"}))
    assert make is not None
    assert make.command == "srcbuild env runtime --python 3.7 --into ~/venvs/torch-1.3.0"
    assert make.install == (
        "~/venvs/torch-1.3.0/bin/python -m pip install torch==1.3.0+cu101 torchvision==0.4.1+cu101 "
        "-f https://download.pytorch.org/whl/torch_stable.html"
    )
    assert make.to_json()["python"] == "3.7"


@pytest.mark.parametrize("here", [frozenset({"3.5"}), frozenset({"3.7", "3.11"}), frozenset({"3.6"})])
def test_a_python_in_the_range_is_enough(here: frozenset[str]) -> None:
    assert python_to_make(WHEEL, here) is None


def test_unknown_pythons_or_no_wheel_say_nothing() -> None:
    assert python_to_make(WHEEL, None) is None
    assert python_to_make(None, frozenset()) is None


def _program(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_pythons_here_counts_programs_not_shims(tmp_path: Path) -> None:
    real, shims = tmp_path / "bin", tmp_path / "shims"
    real.mkdir()
    shims.mkdir()
    (real / "python3.9").symlink_to(os.path.realpath(sys.executable))  # an interpreter, through a link
    _program(shims / "python3.7", b'#!/bin/sh\necho "python3.7: command not found" >&2; exit 127\n')
    _program(real / "python3.x", b"\x7fELF")  # not a version
    (real / "python3.8").write_bytes(b"\x7fELF")  # not executable
    path = os.pathsep.join([str(shims), str(real), str(tmp_path / "missing")])
    assert pythons_here(path) == frozenset({"3.9"})


def test_recommend_adds_the_two_commands_after_the_pip_answer() -> None:
    kb = load_knowledge()
    gpu = identify_name(kb, "GeForce GT 750M", "--gpu")
    lacking = recommend(kb, [gpu], None, [], "--gpu", python_here=frozenset({"3.11"}))
    text = render_recommendation(lacking)
    assert "no Python 3.5 to 3.7 on this machine; make one: srcbuild env runtime --python 3.7" in text
    assert "then install with it: ~/venvs/torch-1.3.0/bin/python -m pip install torch==1.3.0+cu101" in text
    assert lacking.to_json()["gpus"][0]["make_python"]["python"] == "3.7"
    having = recommend(kb, [gpu], None, [], "--gpu", python_here=frozenset({"3.7"}))
    assert "env runtime" not in render_recommendation(having)
    assert having.to_json()["gpus"][0]["make_python"] is None


def test_a_python_here_but_no_active_environment_makes_the_environment_first() -> None:
    make = python_to_make(WHEEL, frozenset({"3.6", "3.11"}), frozenset())
    assert make is not None and make.have
    assert make.lines() == [
        "pip installs into an environment, and none is active; make one: "
        "srcbuild env runtime --python 3.6 --into ~/venvs/torch-1.3.0",
        f"then install with it: ~/venvs/torch-1.3.0/bin/python -m pip {PIP.split(' ', 1)[1]}",
    ]
    assert python_to_make(WHEEL, frozenset({"3.6", "3.11"}), frozenset({"3.7"})) is None  # the active one runs it
    assert python_to_make(WHEEL, frozenset({"3.11"}), frozenset({"3.7"})) is not None  # none here does


def test_active_pythons_are_the_active_environments(tmp_path: Path) -> None:
    from srcbuild.envs.runtime import active_pythons

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3.9").symlink_to(os.path.realpath(sys.executable))
    assert active_pythons({"VIRTUAL_ENV": str(tmp_path)}) == frozenset({"3.9"})
    assert active_pythons({"CONDA_PREFIX": str(tmp_path)}) == frozenset({"3.9"})
    assert active_pythons({}) == frozenset()
