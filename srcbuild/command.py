"""A command a plan will run: argv, working directory, environment changes and why it runs.

Commands are data: the planner makes them without running anything, ``srcbuild plan`` prints
them (text, JSON or a standalone bash script) and the executor hands them to ``srcbuild.proc``.
"""

from __future__ import annotations

import shlex
from dataclasses import field
from pathlib import Path
from typing import Any

from srcbuild.envmods import EnvChanges
from srcbuild.records import record


@record
class Command:
    argv: tuple[str, ...]
    why: str
    cwd: Path | None = None
    env: EnvChanges = field(default_factory=EnvChanges)

    def shell(self) -> str:
        """The command as one bash line (``cd`` and ``env`` handled by the caller's script)."""
        return " ".join(shlex.quote(a) for a in self.argv)

    def to_json(self) -> dict[str, Any]:
        return {
            "argv": list(self.argv),
            "cwd": str(self.cwd) if self.cwd else None,
            "env": self.env.to_json(),
            "why": self.why,
        }
