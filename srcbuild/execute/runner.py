"""What a step handler may use of the executor running it: a structural type, so the handlers
(``srcbuild.execute.handlers``) depend on this small interface and the executor on them, never both
ways."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from rich.console import Console

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.errors import SrcbuildError
from srcbuild.execute.context import BuildContext
from srcbuild.execute.records import Records
from srcbuild.execute.result import BuildResult
from srcbuild.execute.state import BuildState
from srcbuild.plan.model import Plan, Step


class Runner(Protocol):
    """The executor as its handlers see it."""

    plan: Plan
    console: Console
    environ: dict[str, str]
    context: BuildContext | None  # the resolved build (an extension build's ExtContext)
    result: BuildResult
    records: Records  # what earlier steps found (this run's, or the resumed run's state file)
    previous: BuildState | None

    def command_env(self, cmd: Command) -> dict[str, str]: ...

    def log_path(self, index: int, step: Step) -> Path: ...

    def run_command(
        self,
        step: Step,
        cmd: Command,
        log: Path,
        explain: Callable[[Command, proc.RunResult], SrcbuildError] | None = None,
    ) -> None: ...
