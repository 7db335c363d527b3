"""How every benchmark measures: a child's CPU seconds and wall time, runs alternated, min and median.

A benchmark judges its goal on CPU seconds (user + system of the child and every process it waited
for), which do not grow with what else a shared machine runs; the wall time is printed beside it,
with the load average. Two sides (srcbuild and its baseline) run alternately, pair after pair, so a
change in the machine's load hits both alike; each side's min and median are printed, and the
min and median of the per-pair ratio.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Sample:
    """One run: wall seconds and CPU seconds (user + system, children included)."""

    wall: float
    cpu: float


@dataclass
class Series:
    """The samples of one side of a comparison."""

    label: str
    samples: list[Sample] = field(default_factory=list)

    def cpu(self) -> tuple[float, float]:
        """(min, median) CPU seconds."""
        values = [s.cpu for s in self.samples]
        return min(values), statistics.median(values)

    def wall(self) -> tuple[float, float]:
        """(min, median) wall seconds."""
        values = [s.wall for s in self.samples]
        return min(values), statistics.median(values)


def run_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    want: int | None = 0,
    output: list[str] | None = None,
) -> Sample:
    """Run ``argv`` to its end and measure it; exit with its output when its code is not ``want``
    (None: any code). Its output (stdout and stderr together) is appended to ``output`` if given."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        list(argv),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if want is not None and done.returncode != want:
        raise SystemExit(f"expected exit {want}, got {done.returncode}: {' '.join(argv)}\n{done.stdout[-3000:]}")
    if output is not None:
        output.append(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Sample(wall, cpu)


def measure_in_process(work: Callable[[], object]) -> Sample:
    """Wall and CPU seconds (this process's user + system) of ``work()``."""
    before = os.times()
    start = time.perf_counter()
    work()
    wall = time.perf_counter() - start
    after = os.times()
    return Sample(wall, (after.user - before.user) + (after.system - before.system))


def alternate(
    pairs: int, first: Callable[[], Sample], second: Callable[[], Sample]
) -> tuple[list[Sample], list[Sample]]:
    """Run ``first`` and ``second`` alternately ``pairs`` times (which goes first swaps each pair)."""
    a: list[Sample] = []
    b: list[Sample] = []
    for n in range(pairs):
        if n % 2 == 0:
            a.append(first())
            b.append(second())
        else:
            b.append(second())
            a.append(first())
    return a, b


def ratios(a: Series, b: Series) -> tuple[float, float]:
    """(min, median) of the per-pair CPU ratio a / b."""
    values = [x.cpu / y.cpu if y.cpu > 0 else float("inf") for x, y in zip(a.samples, b.samples)]
    return min(values), statistics.median(values)


def load() -> float:
    """The one-minute load average."""
    return round(os.getloadavg()[0], 1)


def row(series: Series) -> str:
    """``label  cpu min / median  wall min / median`` for a table of sides."""
    cmin, cmed = series.cpu()
    wmin, wmed = series.wall()
    return f"  {series.label:40} CPU {cmin:7.3f} / {cmed:7.3f} s   wall {wmin:7.3f} / {wmed:7.3f} s"
