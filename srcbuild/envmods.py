"""Recorded environment changes: set, prepend and unset, each remembering why it was made.

They are applied to a copy of an environment (never to ``os.environ``) and render as shell lines
for ``srcbuild plan --format shell``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Iterator, Mapping

from srcbuild.records import record


@record
class EnvChange:
    """One change: ``op`` is "set", "prepend" (a path list) or "unset"."""

    op: str
    name: str
    value: str = ""
    origin: str = ""  # who asked for it: "recipe [build.env]", "gpu.arch", "compiler", ...

    def apply(self, env: dict[str, str]) -> None:
        if self.op == "set":
            env[self.name] = self.value
        elif self.op == "prepend":
            old = env.get(self.name)
            env[self.name] = self.value if not old else f"{self.value}{os.pathsep}{old}"
        elif self.op == "unset":
            env.pop(self.name, None)
        else:
            raise ValueError(f"unknown environment operation {self.op!r}")

    def shell(self) -> str:
        if self.op == "set":
            return f"export {self.name}={shlex.quote(self.value)}"
        if self.op == "prepend":
            return f'export {self.name}={shlex.quote(self.value)}"${{{self.name}:+:${self.name}}}"'
        return f"unset {self.name}"

    def to_json(self) -> dict[str, str]:
        return {"op": self.op, "name": self.name, "value": self.value, "origin": self.origin}


@record
class EnvChanges:
    """An ordered, immutable list of changes."""

    changes: tuple[EnvChange, ...] = ()

    def set(self, name: str, value: str, origin: str = "") -> EnvChanges:
        return self._then(EnvChange("set", name, value, origin))

    def _then(self, change: EnvChange) -> EnvChanges:
        """These changes and then ``change``; a ``set`` or ``unset`` replaces what came before it for
        that variable (it would override it anyway), so a variable is listed once."""
        kept = self.changes
        if change.op in ("set", "unset"):
            kept = tuple(c for c in kept if c.name != change.name)
        return EnvChanges((*kept, change))

    def prepend(self, name: str, value: str, origin: str = "") -> EnvChanges:
        return EnvChanges((*self.changes, EnvChange("prepend", name, value, origin)))

    def unset(self, name: str, origin: str = "") -> EnvChanges:
        return self._then(EnvChange("unset", name, "", origin))

    def extend(self, other: EnvChanges | Iterable[EnvChange]) -> EnvChanges:
        more = other.changes if isinstance(other, EnvChanges) else tuple(other)
        result = self
        for change in more:
            result = result._then(change)
        return result

    def apply(self, base: Mapping[str, str]) -> dict[str, str]:
        """A new environment: a copy of ``base`` with every change applied in order."""
        env = dict(base)
        for change in self.changes:
            change.apply(env)
        return env

    def final_values(self) -> dict[str, str]:
        """The variables set (not prepended) and their last value, for records and cache keys."""
        out: dict[str, str] = {}
        for c in self.changes:
            if c.op == "set":
                out[c.name] = c.value
            elif c.op == "unset":
                out.pop(c.name, None)
        return out

    def shell_lines(self) -> list[str]:
        return [c.shell() for c in self.changes]

    def to_json(self) -> list[dict[str, str]]:
        return [c.to_json() for c in self.changes]

    def __iter__(self) -> Iterator[EnvChange]:
        return iter(self.changes)

    def __len__(self) -> int:
        return len(self.changes)
