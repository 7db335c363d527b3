"""srcbuild's own overhead on the fixture build vs running the same commands by hand (goal: < 5%).

"By hand" is the bash script ``srcbuild plan torch --format shell`` prints: the same git, update-
alternatives and ``setup.py bdist_wheel`` commands with the same variables. ``srcbuild torch`` adds
its host probe, preflight rules, state files, log tee, progress bar, wheel verification and cache
store. Each round starts from an empty work dir (fresh clone from the local world, cold build tree)
with ccache off, so both sides do the same work; the figures are medians.

    CUDA_HOME=<a CUDA 11.8 toolkit> python bench/bench_overhead.py [--rounds 5] [--recipe world-kepler-cu118]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.integration.build.world import RECIPES, publish  # noqa: E402


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:4])} failed:\n{done.stdout[-3000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--recipe", default="world-kepler-cu118")
    args = ap.parse_args()
    if "CUDA_HOME" not in os.environ:
        sys.exit("set CUDA_HOME to the CUDA toolkit the recipe pins (e.g. a CUDA 11.8 home)")
    scratch = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    try:
        world = publish(scratch / "world")
        venv = scratch / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        recipe = str(RECIPES / f"{args.recipe}.toml")
        common = ["--recipe", recipe, "--mirror", world.mirror_rule, "--env", str(venv)]
        by_hand: list[float] = []
        srcbuild: list[float] = []
        for n in range(args.rounds):
            for side in ("hand", "srcbuild") if n % 2 == 0 else ("srcbuild", "hand"):
                work = scratch / f"{side}-{n}"
                env = {
                    **os.environ,
                    "SRCBUILD_WORK_DIR": str(work / "work"),
                    "SRCBUILD_CACHE_DIR": str(work / "cache"),
                    "SRCBUILD_CCACHE": "0",
                }
                if side == "hand":
                    script = work / "build.sh"
                    work.mkdir(parents=True)
                    plan = subprocess.run(
                        [sys.executable, "-m", "srcbuild", "plan", "torch", *common, "--format", "shell"],
                        env=env,
                        cwd=REPO,
                        stdout=subprocess.PIPE,
                        text=True,
                        check=True,
                    )
                    script.write_text(plan.stdout)
                    by_hand.append(timed(["bash", str(script)], env))
                else:
                    srcbuild.append(timed([sys.executable, "-m", "srcbuild", "torch", *common], env))
                shutil.rmtree(work)
        hand_med, src_med = statistics.median(by_hand), statistics.median(srcbuild)
        print(f"fixture build of {args.recipe}, {args.rounds} rounds each, medians (ccache off, cold tree):")
        for label, med, runs in (
            ("by hand (plan --format shell | bash)", hand_med, by_hand),
            ("srcbuild torch", src_med, srcbuild),
        ):
            print(f"  {label:<40} {med:7.2f} s   runs: {', '.join(f'{t:.2f}' for t in runs)}")
        over = src_med - hand_med
        print(f"  overhead: {over:+.2f} s = {100 * over / hand_med:+.1f}% (goal < 5%; a fixed cost, so it shrinks as")
        print("  the build grows: a real torch build takes an hour or more)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
