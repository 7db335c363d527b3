"""The one precedence every setting is decided by: default < recipe < config file < environment <
command line, each value with its origin.

The config file reaches a command through its environment mapping (``srcbuild.config.configured``
puts each value under the variable it stands for, unless the environment sets that variable), and
``srcbuild.config.origin`` tells the two apart; so one ``from_env`` layer covers both.
``srcbuild.resolve.decide`` decides a build's settings with these, before the host is probed.

Every ``SRCBUILD_*`` variable is read here (``srcbuild.config``, which applies the file, aside),
and only when ``srcbuild.settings`` registers it (one line there); ``shown`` is what
``srcbuild config show`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from srcbuild.config import env_bool, origin
from srcbuild.records import record
from srcbuild.settings import BY_VAR, SETTINGS, Setting

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


def setting(var: str) -> Setting:
    """The registered setting ``var``; reading an unregistered one is a mistake in srcbuild itself."""
    found = BY_VAR.get(var)
    if found is None:
        raise AssertionError(f"{var} is not a registered setting: add a Setting line to srcbuild/settings.py")
    return found


def _raw(environ: Mapping[str, str], var: str) -> tuple[str, str] | None:
    """(value, the variable it came from): ``var``, else its registered fallback; None when unset.
    A variable of another tool (``MAX_JOBS``) is read as it is; a ``SRCBUILD_*`` one must be registered."""
    names = (var, setting(var).fallback) if var.startswith("SRCBUILD_") else (var,)
    for name in names:
        if name and environ.get(name):
            return environ[name], name
    return None


def env_value(environ: Mapping[str, str], var: str) -> str | None:
    """The registered setting ``var``'s text (or its fallback's); None when unset or empty."""
    found = _raw(environ, var)
    return found[0] if found else None


def from_env(environ: Mapping[str, str], var: str, read: Callable[[str], T]) -> Chosen[T] | None:
    """``var``'s value as ``read`` reads it, with its origin; None when it is unset or empty."""
    found = _raw(environ, var)
    if found is None:
        return None
    return Chosen(read(found[0]), origin(environ, found[1]))


def from_env_bool(environ: Mapping[str, str], var: str) -> Chosen[bool] | None:
    """``var`` as yes/no (``srcbuild.config.env_bool``: anything else is a UsageError); None when unset."""
    if var.startswith("SRCBUILD_"):
        setting(var)
    value = env_bool(environ, var)
    return None if value is None else Chosen(value, origin(environ, var))


def chosen(environ: Mapping[str, str], var: str) -> Chosen[str | None]:
    """The registered setting ``var`` as text with its origin; ``Chosen(None, "default")`` when unset."""
    return from_env(environ, var, str) or Chosen(None, "default")


@record
class Shown:
    """One row of ``srcbuild config show``."""

    setting: Setting
    value: str | None  # None: unset (``setting.default`` says what applies)
    origin: str


def shown(environ: Mapping[str, str]) -> list[Shown]:
    """Every registered setting with its value (a secret's is hidden) and origin, in registry order."""
    rows = []
    for entry in SETTINGS:
        value = chosen(environ, entry.var)
        if value.value is None:
            rows.append(Shown(entry, None, "default"))
        else:
            rows.append(Shown(entry, "(set, hidden)" if entry.secret else value.value, value.origin))
    return rows


def from_cli(value: T | None, flag: str) -> Chosen[T] | None:
    """A command-line option's value (None: not given)."""
    return None if value is None else Chosen(value, f"command line {flag}")
