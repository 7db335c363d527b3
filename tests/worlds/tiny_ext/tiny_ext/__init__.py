"""The fixture extension: ``greet()`` comes from the C library of the greet submodule."""

from tiny_ext._tiny import greet  # noqa: F401
