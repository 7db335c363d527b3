"""A resumed build after a failure late in the compile vs a full build (goal: only what is left).

The fake torch's last library is compiled through a launcher that, with FAKE_TORCH_FAIL_ONCE set,
fails once the way the OOM killer does. ``srcbuild torch --keep-build`` fails there after compiling
everything else; ``--resume`` then re-enters at the build step with the same build tree, so ninja
rebuilds only that library. Compared with a full build of the same recipe, per round, in medians,
and by the ninja edges each run executed.

    CUDA_HOME=<a CUDA 11.8 toolkit> python bench/bench_resume.py [--rounds 5] [--recipe world-kepler-cu118]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.integration.execute.world import RECIPES, publish  # noqa: E402

NINJA = re.compile(r"^\[(\d+)/(\d+)\]", re.MULTILINE)


def run(argv: list[str], env: dict[str, str], want: int) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != want:
        sys.exit(f"expected exit {want}, got {done.returncode}:\n{done.stdout[-3000:]}")
    return elapsed


def edges(build_log: Path, run_index: int) -> int:
    """How many ninja edges the ``run_index``-th ``cmake --build`` in the log executed."""
    runs = build_log.read_text().split("+ cmake --build")[1:]
    return len(NINJA.findall(runs[run_index]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--recipe", default="world-kepler-cu118")
    args = ap.parse_args()
    if "CUDA_HOME" not in os.environ:
        sys.exit("set CUDA_HOME to the CUDA toolkit the recipe pins (e.g. a CUDA 11.8 home)")
    scratch = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    try:
        world = publish(scratch / "world")
        venv = scratch / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        argv = [sys.executable, "-m", "srcbuild", "torch", "--recipe", str(RECIPES / f"{args.recipe}.toml")]
        argv += ["--mirror", world.mirror_rule, "--env", str(venv), "--keep-build"]
        full, resumed, full_edges, resumed_edges = [], [], [], []
        for n in range(args.rounds):
            work = scratch / f"round-{n}"
            env = {**os.environ, "SRCBUILD_WORK_DIR": str(work / "work"), "SRCBUILD_CACHE_DIR": str(work / "cache")}
            env["SRCBUILD_CCACHE"] = "0"
            full.append(run(argv, env, 0))
            log = next((work / "work" / "builds").glob("*-torch/logs/*-build.log"))
            full_edges.append(edges(log, 0))
            shutil.rmtree(work)
            env["FAKE_TORCH_FAIL_ONCE"] = str(scratch / f"marker-{n}")
            run(argv, env, 5)  # fails late: the last library
            resumed.append(run([*argv, "--resume"], env, 0))
            resumed_edges.append(edges(log, 1))
            shutil.rmtree(work)
        f, r = statistics.median(full), statistics.median(resumed)
        fe, re_ = statistics.median(full_edges), statistics.median(resumed_edges)
        print(f"fixture build of {args.recipe}, {args.rounds} rounds, medians (ccache off):")
        print(f"  {'full build (srcbuild torch)':<36} {f:6.2f} s   ninja edges run: {fe:.0f}")
        print(f"  {'resume after a late failure':<36} {r:6.2f} s   ninja edges run: {re_:.0f}")
        print(f"  resumed / full: {r / f:.2f}x time, {re_ / fe:.2f}x edges")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
