"""Run every benchmark of ``goals.py`` and print one table of their goals: met or missed.

Each benchmark's own output goes to ``--log`` (default ``goals.log`` in a temporary directory,
named at the end); the ``goal-json:`` lines each prints (``goal_line.py``) make the table:
metric, srcbuild, baseline, ratio, goal, met or missed, and the load average when it was
measured. Exit 0 when every goal is met. ``--quick`` runs fewer repetitions (a loaded machine,
little time); ``--only`` picks benchmarks by name. The benchmarks that build the fixture torch use
``CUDA_HOME``, else the CUDA 11.8 toolkit ``tests/setup.sh`` provisions.

    python bench/run_all.py [--only startup,install,...] [--quick] [--log FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from goal_line import parse_goal_lines  # noqa: E402
from goals import BENCHES, CUDA_118, NEEDS_CUDA  # noqa: E402


def run_bench(name: str, log: Path, quick: bool) -> tuple[list[dict[str, object]], int, float]:
    script, full, short = BENCHES[name]
    argv = short if quick else full
    env = dict(os.environ)
    if name in NEEDS_CUDA and "CUDA_HOME" not in env and CUDA_118.is_dir():
        env["CUDA_HOME"] = str(CUDA_118)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HERE / script), *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    elapsed = time.perf_counter() - start
    with log.open("a") as out:
        out.write(f"==== {script} {' '.join(argv)} (exit {done.returncode}, {elapsed:.0f} s)\n{done.stdout}\n")
    return parse_goal_lines(done.stdout), done.returncode, elapsed


def table(rows: list[dict[str, object]]) -> list[str]:
    """One block per goal: the figures on the first line, the goal and the note wrapped below (80 columns)."""
    lines = []
    for row in rows:
        verdict = "met" if row.get("met") else "MISSED"
        lines.append(f"{verdict:6} {row.get('metric', '')}")
        lines.append(
            f"       srcbuild {row.get('srcbuild', '')}, baseline {row.get('baseline', '')}, "
            f"ratio {row.get('ratio', '')}, load {row.get('load', '')}"
        )
        lines += textwrap.wrap(
            f"goal: {row.get('goal', '')}", 80, initial_indent="       ", subsequent_indent="         "
        )
        if row.get("note"):
            lines += textwrap.wrap(str(row["note"]), 80, initial_indent="       ", subsequent_indent="       ")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHES), help=f"comma-separated: {', '.join(BENCHES)}")
    parser.add_argument("--log", type=Path, default=None, help="where each benchmark's own output goes")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a loaded machine, little time)")
    args = parser.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    log = args.log or Path(tempfile.mkdtemp(prefix="goals-")) / "goals.log"
    log.write_text("")
    rows: list[dict[str, object]] = []
    for name in names:
        print(f"running {name} (load average {os.getloadavg()[0]:.1f}) ...", flush=True)
        found, code, elapsed = run_bench(name, log, args.quick)
        if not found:
            rows.append({"metric": f"{name}: no figures (exit {code}; see {log})", "met": False})
        rows.extend(found)
        print(f"  {name}: {len(found)} goal(s) in {elapsed:.0f} s", flush=True)
    print(f"\n{os.cpu_count()} CPUs; each benchmark's own output: {log}\n")
    print("\n".join(table(rows)))
    missed = sum(1 for row in rows if not row.get("met"))
    print(f"\n{len(rows) - missed} of {len(rows)} goals met")
    return 0 if missed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
