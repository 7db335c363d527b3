"""The fake torchvision package."""

from torchvision.version import __version__, torch_version  # noqa: F401  (written by setup.py)
