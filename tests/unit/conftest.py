"""Unit tests run no other program: any subprocess is a test failure (integration tests run them).

The refusal raises where the program would start, and is also checked after the test, so code that
swallows the error (a probe that turns any failure into "not found") cannot hide the attempt.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    started: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        started.append(args[0] if args else kwargs)
        raise AssertionError(f"a unit test started a subprocess: {started[-1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    yield
    assert not started, f"a unit test started a subprocess (and the error was swallowed): {started}"
