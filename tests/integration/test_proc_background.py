"""proc.Background: a call running in a thread hands back its value, or what it raised, to the caller;
two probes in the background run at the same time."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from srcbuild import proc

pytestmark = pytest.mark.integration

# makes the file argv[1], then waits (at most 20 s) for the file argv[2]: two of these, each waiting
# for the other's file, both finish only when they run at the same time
MEET = (
    "import os, sys, time; open(sys.argv[1], 'w').close(); end = time.time() + 20\n"
    "while not os.path.exists(sys.argv[2]) and time.time() < end: time.sleep(0.01)\n"
    "print('met' if os.path.exists(sys.argv[2]) else 'alone')"
)


def test_background_returns_the_value_of_a_probe_that_ran_beside_the_caller() -> None:
    started = threading.Event()

    def ask() -> str | None:
        started.set()
        return proc.probe([sys.executable, "-c", "print('answer')"])

    asking = proc.Background(ask)
    assert started.wait(10)  # running before result() is asked for
    assert asking.result() == "answer\n"


def test_two_probes_in_the_background_run_at_the_same_time(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    first = proc.Background(lambda: proc.probe([sys.executable, "-S", "-c", MEET, str(a), str(b)], timeout=30))
    second = proc.Background(lambda: proc.probe([sys.executable, "-S", "-c", MEET, str(b), str(a)], timeout=30))
    assert (first.result(), second.result()) == ("met\n", "met\n")


def test_background_raises_what_the_call_raised_in_the_caller() -> None:
    def fail() -> None:
        raise ValueError("unreadable")

    with pytest.raises(ValueError, match="unreadable"):
        proc.Background(fail).result()
