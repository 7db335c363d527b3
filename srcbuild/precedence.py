"""The one precedence every setting is decided by: default < recipe < config file < environment <
command line, each value with its origin.

The config file reaches a command through its environment mapping (``srcbuild.config.configured``
puts each value under the variable it stands for, unless the environment sets that variable), and
``srcbuild.config.origin`` tells the two apart; so one ``from_env`` layer covers both.
``srcbuild.resolve.decide`` decides a build's settings with these, before the host is probed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from srcbuild.config import env_bool, origin
from srcbuild.records import record

T = TypeVar("T")


@record
class Chosen(Generic[T]):
    """A setting's value and where it came from ("default", "recipe r.toml [build.portable]",
    "environment SRCBUILD_PORTABLE", "config file PATH (portable)", "command line --portable")."""

    value: T
    origin: str


def precedence(default: Chosen[T], *layers: Chosen[T] | None) -> Chosen[T]:
    """The last layer that says something (not None) wins; callers pass the layers lowest first:
    the recipe, the environment (config file included), the command line."""
    chosen = default
    for layer in layers:
        if layer is not None:
            chosen = layer
    return chosen


def from_env(environ: Mapping[str, str], var: str, read: Callable[[str], T]) -> Chosen[T] | None:
    """``var``'s value as ``read`` reads it, with its origin; None when it is unset or empty."""
    raw = environ.get(var)
    if raw is None or raw == "":
        return None
    return Chosen(read(raw), origin(environ, var))


def from_env_bool(environ: Mapping[str, str], var: str) -> Chosen[bool] | None:
    """``var`` as yes/no (``srcbuild.config.env_bool``: anything else is a UsageError); None when unset."""
    value = env_bool(environ, var)
    return None if value is None else Chosen(value, origin(environ, var))


def from_cli(value: T | None, flag: str) -> Chosen[T] | None:
    """A command-line option's value (None: not given)."""
    return None if value is None else Chosen(value, f"command line {flag}")
