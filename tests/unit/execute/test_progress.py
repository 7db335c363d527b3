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
