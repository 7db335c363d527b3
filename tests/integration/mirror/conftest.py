"""The fixture world and the build venv of the build tests, and the local conda channels and
recipe writer of the environment tests, shared with the mirror tests."""

from tests.integration.envs.conftest import channels, channels_master, write_recipe
from tests.integration.execute.conftest import build_venv, world

__all__ = ["build_venv", "channels", "channels_master", "world", "write_recipe"]
