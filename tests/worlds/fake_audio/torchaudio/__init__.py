"""The fake torchaudio package."""

from torchaudio.version import __version__, torch_version  # noqa: F401  (written by setup.py)
