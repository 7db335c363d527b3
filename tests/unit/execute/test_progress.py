"""Ninja's [n/N] lines and the ETA."""

from __future__ import annotations

import io

from rich.console import Console

from srcbuild.execute.progress import NinjaProgress, eta_seconds, parse_ninja


def test_parse_ninja() -> None:
    assert parse_ninja("[12/345] Building CXX object caffe2/x.o") == (12, 345, "Building CXX object caffe2/x.o")
    assert parse_ninja("-- Configuring done") is None
    assert parse_ninja("  [3/4] Linking C shared library libtorch.so") == (3, 4, "Linking C shared library libtorch.so")


def test_eta() -> None:
    assert eta_seconds(100.0, 110.0, 10, 40) == 30.0
    assert eta_seconds(100.0, 110.0, 0, 40) is None
    assert eta_seconds(100.0, 110.0, 40, 40) == 0.0


def test_bar_follows_the_lines_and_restarts_with_a_new_ninja_run() -> None:
    console = Console(file=io.StringIO(), force_terminal=False, width=100)
    with NinjaProgress(console, "build") as bar:
        bar.feed("[1/10] a")
        bar.feed("[5/10] b")
        assert (bar.done, bar.total) == (5, 10)
        bar.feed("not a ninja line")
        bar.feed("[1/2] c")  # cmake ran ninja again: a new count
        assert (bar.done, bar.total) == (1, 2)


def test_a_silent_step_in_a_pipe_prints_a_heartbeat_with_the_last_thing_it_compiled() -> None:
    import time

    from srcbuild.execute.progress import Heartbeat, heartbeat_line

    assert heartbeat_line("torch-build", 750.0, "Building CXX object a.o") == (
        "    torch-build: still running, 12m30s; last: Building CXX object a.o"
    )
    assert heartbeat_line("env", 5.0, "") == "    env: still running, 5s"
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False)
    with Heartbeat(console, "torch-build", every=0.05) as beat:
        beat.feed("[12/345] Building CXX object caffe2/torch/csrc/a.cpp.o")
        beat.feed("")  # a blank line is not the last thing done
        time.sleep(0.3)
    beats = out.getvalue().replace("\n      ", " ").splitlines()  # a long line goes on, indented, below
    assert beats and set(beats) == {
        "    torch-build: still running, 0s; last: Building CXX object caffe2/torch/csrc/a.cpp.o"
    }
    terminal = io.StringIO()
    with Heartbeat(Console(file=terminal, width=80, force_terminal=True), "x", every=0.05):
        time.sleep(0.2)
    assert terminal.getvalue() == ""  # a terminal shows its own progress: no heartbeat


def test_what_a_command_does_is_wrapped_never_cut() -> None:
    from srcbuild.command import Command
    from srcbuild.execute.executor import Executor

    out = io.StringIO()
    executor = Executor.__new__(Executor)
    executor.console = Console(file=out, width=60, force_terminal=False)
    why = "install the recipe's pip packages into /data/.cache/srcbuild/work/envs/venv-0123456789abcdef"
    executor._announce(Command(("true",), why))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "…" not in out.getvalue()
    assert " ".join(" ".join(lines).split()) == f"- {why}"
