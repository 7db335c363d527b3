"""Progress of a build from ninja's ``[n/N]`` lines, with an estimate of the time left."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

NINJA_LINE = re.compile(r"^\[(\d+)/(\d+)\]\s*(.*)$")


def parse_ninja(line: str) -> tuple[int, int, str] | None:
    """``[12/345] Building CXX object x.o`` → (12, 345, "Building CXX object x.o")."""
    m = NINJA_LINE.match(line.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def eta_seconds(started: float, now: float, done: int, total: int) -> float | None:
    """Time left at the average rate so far; None before the first edge finishes."""
    if done <= 0 or total <= 0 or now <= started:
        return None
    return (now - started) / done * max(total - done, 0)


class NinjaProgress:
    """A rich progress bar driven by ``feed(line)``; a new ninja run (CMake re-run) restarts it."""

    def __init__(self, console: Console, label: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.label = label
        self.clock = clock
        self.done = 0
        self.total = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> NinjaProgress:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.label, total=None, visible=False)  # shown at the first [n/N]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def feed(self, line: str) -> None:
        parsed = parse_ninja(line)
        if parsed is None or self._progress is None or self._task is None:
            return
        done, total, what = parsed
        if total != self.total or done < self.done:
            self._progress.reset(self._task, total=total, completed=0)
        self.done, self.total = done, total
        description = f"{self.label} {what[:40]}"
        self._progress.update(self._task, completed=done, total=total, description=description, visible=True)
