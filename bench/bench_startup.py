"""Benchmark: how long short srcbuild commands take, against ``python -c pass``, side by side.

Each command runs ``--runs`` times as a child process (``python -m srcbuild ...`` with this
interpreter); the best and the median wall time are printed with the interpreter's own start-up
as the baseline, and each command's goal:

* ``srcbuild --help`` <= 0.15 s
* ``srcbuild doctor`` <= 0.25 s
* ``srcbuild recipes list`` (no goal; for comparison)

    python bench/bench_startup.py --runs 7
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("python -c pass", [sys.executable, "-c", "pass"], None),
    ("srcbuild --help", [sys.executable, "-m", "srcbuild", "--help"], 0.15),
    ("srcbuild recipes list", [sys.executable, "-m", "srcbuild", "recipes", "list"], None),
    ("srcbuild doctor", [sys.executable, "-m", "srcbuild", "doctor"], 0.25),
]


def wall(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{'command':24} {'best s':>7} {'median s':>9} {'vs pass':>8}  goal")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for label, argv, goal in COMMANDS:
            times = sorted(wall(argv, Path(tmp)) for _ in range(args.runs))
            best, median = times[0], statistics.median(times)
            base = base or best
            verdict = "" if goal is None else f"<= {goal} s: {'met' if best <= goal else 'missed'}"
            print(f"{label:24} {best:7.3f} {median:9.3f} {best / base:7.1f}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
