"""The cache unit tests run no other program: any subprocess is a test failure."""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture(autouse=True)
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a unit test started a subprocess: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
