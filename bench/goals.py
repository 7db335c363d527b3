"""Every performance goal in one run: each benchmark side by side with its baseline, then one table.

Runs the benchmarks below one after the other (their own output goes to ``--log``, default
``goals.log`` in a temporary directory, printed at the end), gathers the ``goal:`` line each prints
for each goal (``goal_line.py``) and prints: metric, srcbuild, baseline, ratio, goal, met or
missed, and the load average when it was measured. The quick settings keep the whole run to
about 15-25 minutes on 2 cores; ``--only`` picks benchmarks by name.

* ``startup``: ``--help`` <= 0.15 s and ``doctor`` <= 0.25 s, against ``python -c pass``;
* ``install``: a cache hit of ``srcbuild install`` <= 1.3x ``pip install`` at 0.01, 100 and 500 MB;
* ``lookup``: a lookup < 50 ms and flat from 100 to 100,000 entries;
* ``verify``: the real 620 MB torch 2.0.1+cu117 wheel, <= 0.3x unzip + cuobjdump, <= 200 MiB;
* ``source_sync``: a second tag with a warm cache >= 10x faster than ``git clone --recursive``, or,
  where fetching that tag's new objects and writing its files alone take over a tenth of a clone
  (the local link: git's server side runs on the same CPUs), within 1.3x of that floor;
* ``overhead``: ``srcbuild torch`` over the same commands by hand: < 5% on the larger fixture build,
  <= 0.8 s fixed on the 3 s fixture build, whose 5% is less than srcbuild's floor (its ratio and
  the floor's are printed beside it); needs a CUDA 11.8 toolkit: ``CUDA_HOME``, else the one
  ``tests/setup.sh`` provisions.

A goal the machine's load decides (wall time on a shared machine) says so in its note: the CPU
seconds beside it do not depend on the neighbours.

    python bench/goals.py [--only startup,install,...] [--fewer] [--log FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from goal_line import parse_goal_lines  # noqa: E402

CUDA_118 = Path.home() / ".cache/srcbuild-ci/toolchains/cuda-11.8-debian"

# name -> (the benchmark's file, its quick arguments)
BENCHES: dict[str, tuple[str, list[str]]] = {
    "startup": ("bench_startup.py", ["--runs", "7"]),
    "install": ("bench_cache_install.py", ["--rounds", "3", "--sizes", "0.01,100,500"]),
    "lookup": ("bench_cache_lookup.py", ["--sizes", "100,10000,100000", "--repeat", "30"]),
    "verify": ("bench_verify_wheel.py", ["--repeat", "1"]),
    "source_sync": ("bench_source_sync.py", ["--repeat", "1"]),
    "overhead": ("bench_overhead.py", ["--rounds", "3", "--large-ops", "8", "--large-rounds", "2"]),
}
# --fewer: one round each where a benchmark repeats (a loaded machine, little time)
FEWER: dict[str, list[str]] = {
    "startup": ["--runs", "3"],
    "install": ["--rounds", "1", "--sizes", "0.01,100,500"],
    "lookup": ["--sizes", "100,10000,100000", "--repeat", "10"],
    "overhead": ["--rounds", "1", "--large-ops", "8", "--large-rounds", "1"],
}


def run_bench(name: str, log: Path, fewer: bool = False) -> tuple[list[dict[str, object]], int, float]:
    script, quick = BENCHES[name]
    quick = FEWER.get(name, quick) if fewer else quick
    env = dict(os.environ)
    if name == "overhead" and "CUDA_HOME" not in env and CUDA_118.is_dir():
        env["CUDA_HOME"] = str(CUDA_118)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HERE / script), *quick],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    elapsed = time.perf_counter() - start
    with log.open("a") as out:
        out.write(f"==== {script} {' '.join(quick)} (exit {done.returncode}, {elapsed:.0f} s)\n{done.stdout}\n")
    return parse_goal_lines(done.stdout), done.returncode, elapsed


def cell(text: object, width: int) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "~"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHES), help=f"comma-separated: {', '.join(BENCHES)}")
    parser.add_argument("--log", type=Path, default=None, help="where each benchmark's own output goes")
    parser.add_argument("--fewer", action="store_true", help="one round where a benchmark repeats (a loaded machine)")
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
        found, code, elapsed = run_bench(name, log, args.fewer)
        if not found:
            rows.append({"metric": f"{name}: no figures (exit {code}; see {log})", "met": False})
        rows.extend(found)
        print(f"  {name}: {len(found)} goal(s) in {elapsed:.0f} s", flush=True)
    print(f"\n{os.cpu_count()} CPUs; each benchmark's own output: {log}\n")
    header = f"{'metric':44} {'srcbuild':>10} {'baseline':>14} {'ratio':>7}  {'goal':34} {'':6} {'load':>4}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{cell(row.get('metric', ''), 44):44} {cell(row.get('srcbuild', ''), 10):>10} "
            f"{cell(row.get('baseline', ''), 14):>14} {cell(row.get('ratio', ''), 7):>7}  "
            f"{cell(row.get('goal', ''), 34):34} {'met' if row.get('met') else 'MISSED':6} {row.get('load', ''):>4}"
        )
        if row.get("note"):
            print(f"    {row['note']}")
    missed = sum(1 for row in rows if not row.get("met"))
    print(f"\n{len(rows) - missed} of {len(rows)} goals met")
    return 0 if missed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
