"""The fake torch package: a version and the libraries the build put in torch/lib."""

import os

from torch.version import __version__, cuda  # noqa: F401  (written by setup.py)

LIB_DIR = os.path.join(os.path.dirname(__file__), "lib")
