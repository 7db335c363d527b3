"""Progress of a build from ninja's ``[n/N]`` lines, with an estimate of the time left."""

from __future__ import annotations

import re
import threading
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


def plain_progress_line(label: str, done: int, total: int, eta: float | None) -> str:
    """``build: 30% (36/120), ETA 1m20s``: a progress report for output that is not a terminal."""
    percent = done * 100 // total if total else 0
    left = "" if eta is None else f", ETA {int(eta) // 60}m{int(eta) % 60:02d}s"
    return f"    {label}: {percent}% ({done}/{total}){left}"


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
    """A rich progress bar driven by ``feed(line)``; a new ninja run (CMake re-run) restarts it.

    When the console is not a terminal (a pipe, a log file, nohup, CI) a bar cannot redraw: each
    tenth of the compile units done is a plain line instead (``build: 30% (36/120), ETA 1m20s``).
    """

    def __init__(
        self,
        console: Console,
        label: str,
        clock: Callable[[], float] = time.monotonic,
        printed: Callable[[], None] | None = None,
    ) -> None:
        self.console = console
        self.label = label
        self.clock = clock
        self.printed = printed  # told of each plain line (a heartbeat then waits again)
        self.done = 0
        self.total = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._started = clock()
        self._last_tenth = -1

    def __enter__(self) -> NinjaProgress:
        self._started = self.clock()
        self._last_tenth = -1
        if not self.console.is_terminal:
            return self
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

    def _plain(self, done: int, total: int) -> None:
        if total != self.total or done < self.done:
            self._started, self._last_tenth = self.clock(), -1  # a new ninja run
        self.done, self.total = done, total
        tenth = done * 10 // total if total else 0
        if tenth > self._last_tenth:
            self._last_tenth = tenth
            eta = eta_seconds(self._started, self.clock(), done, total)
            self.console.print(plain_progress_line(self.label, done, total, eta), markup=False, highlight=False)
            if self.printed is not None:
                self.printed()

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def feed(self, line: str) -> None:
        parsed = parse_ninja(line)
        if parsed is None:
            return
        if self._progress is None or self._task is None:
            self._plain(*parsed[:2])
            return
        done, total, what = parsed
        if total != self.total or done < self.done:
            self._progress.reset(self._task, total=total, completed=0)
        self.done, self.total = done, total
        description = f"{self.label} {what[:40]}"
        self._progress.update(self._task, completed=done, total=total, description=description, visible=True)


HEARTBEAT_EVERY = 30.0  # seconds of silence in a pipe before a step says it is alive


def heartbeat_line(label: str, elapsed: float, last: str) -> str:
    """``    torch-build: still running, 12m30s; last: Building CXX object ...``."""
    minutes, seconds = divmod(int(elapsed), 60)
    spent = f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
    return f"    {label}: still running, {spent}" + (f"; last: {last}" if last else "")


class Heartbeat:
    """For output that is not a terminal (a pipe, a log, CI), where nothing redraws: a line after
    every ``every`` seconds in which the step printed nothing, with the time since it started and
    the last thing its command started or compiled (ninja's ``[n/N] what``, else its last line of
    output). ``feed`` takes each line of the command's output, ``printed`` says a line went out."""

    def __init__(
        self, console: Console, label: str, every: float = HEARTBEAT_EVERY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.console = console
        self.label = label
        self.every = every
        self.clock = clock
        self.started = self.quiet_since = clock()
        self.last = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        self.started = self.quiet_since = self.clock()
        if not self.console.is_terminal and not self.console.quiet:
            self._thread = threading.Thread(target=self._beat, name=f"heartbeat {self.label}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def feed(self, line: str) -> None:
        parsed = parse_ninja(line)
        text = parsed[2] if parsed is not None else line.strip()
        if text:
            self.last = text

    def printed(self) -> None:
        self.quiet_since = self.clock()

    def _beat(self) -> None:
        while not self._stop.wait(min(self.every, 1.0)):
            now = self.clock()
            if now - self.quiet_since >= self.every:
                from srcbuild.console import print_lines

                print_lines([heartbeat_line(self.label, now - self.started, self.last)], self.console)
                self.quiet_since = now
