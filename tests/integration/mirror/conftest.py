"""The fixture world and the build venv of the build tests, shared with the mirror tests."""

from tests.integration.execute.conftest import build_venv, world

__all__ = ["build_venv", "world"]
