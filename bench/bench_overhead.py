"""srcbuild's own overhead on a fixture build vs running the same commands by hand (goal: < 5%).

"By hand" is the bash script ``srcbuild plan torch --format shell`` prints: the same git, update-
alternatives and ``setup.py bdist_wheel`` commands with the same variables. ``srcbuild torch`` adds
its host probe, preflight rules, state files, log tee, progress bar, wheel verification and cache
store. Each round starts from an empty work dir (fresh clone from the local world, cold build tree)
with ccache off, so both sides do the same work. Medians and best runs are printed: the
machine's noise only adds time, so the best runs show srcbuild's fixed cost most clearly.

Two rows: the fixture build the integration tests use (8 small C files and one CUDA file), and,
unless ``--large-ops 0``, a larger fixture build of the same fake torch with that many generated
C files added (each about 1.5 s of gcc -O3), because srcbuild's cost is fixed and a real torch
build takes an hour or more.

    CUDA_HOME=<a CUDA 11.8 toolkit> python bench/bench_overhead.py [--rounds 5] [--large-ops 16]
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

from tests.integration.execute.world import RECIPES, publish  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from goal_line import goal_line  # noqa: E402


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:4])} failed:\n{done.stdout[-3000:]}")
    return elapsed


def measure(scratch: Path, world_root: Path, recipe: str, venv: Path, rounds: int) -> tuple[list[float], list[float]]:
    """(by hand, srcbuild) wall times of ``rounds`` alternating rounds against one world."""
    world = world_root
    rule = f"https://github.com/=file://{world}/"
    common = ["--recipe", recipe, "--mirror", rule, "--env", str(venv)]
    by_hand: list[float] = []
    srcbuild: list[float] = []
    for n in range(rounds):
        for side in ("hand", "srcbuild") if n % 2 == 0 else ("srcbuild", "hand"):
            work = scratch / f"{side}-{n}"
            env = {
                **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},  # as installed
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
    return by_hand, srcbuild


def report(label: str, by_hand: list[float], srcbuild: list[float]) -> tuple[float, float]:
    """Print one row's figures; return (seconds srcbuild adds, by hand), medians."""
    hand_med, src_med = statistics.median(by_hand), statistics.median(srcbuild)
    print(f"{label}, {len(by_hand)} rounds each (ccache off, cold tree):")
    for name, med, runs in (
        ("by hand (plan --format shell | bash)", hand_med, by_hand),
        ("srcbuild torch", src_med, srcbuild),
    ):
        print(
            f"  {name:<40} median {med:6.2f} s, best {min(runs):6.2f} s   runs: {', '.join(f'{t:.2f}' for t in runs)}"
        )
    for what, hand, src in (("median", hand_med, src_med), ("best", min(by_hand), min(srcbuild))):
        over = src - hand
        verdict = "met" if 100 * over / hand < 5 else "not met"
        print(f"  overhead ({what}): {over:+.2f} s = {100 * over / hand:+.1f}% (goal < 5%: {verdict})")
    return src_med - hand_med, hand_med


def goal_lines(small: tuple[float, float], large: tuple[float, float] | None) -> None:
    """One goal line per build: < 5% over the same commands by hand."""
    for label, row in (("fixture build", small), ("larger fixture build", large)):
        if row is None:
            continue
        over, hand = row
        goal_line(f"overhead, {label} (median)", f"{over:+.2f} s", f"{hand:.2f} s", f"{100 * over / hand:+.1f}%",
                  "< 5% over the commands by hand", 100 * over / hand < 5)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--recipe", default="world-kepler-cu118")
    ap.add_argument(
        "--large-ops", type=int, default=16, help="generated C files of the second, larger build (0: skip it)"
    )
    ap.add_argument("--large-rounds", type=int, default=3)
    args = ap.parse_args()
    if "CUDA_HOME" not in os.environ:
        sys.exit("set CUDA_HOME to the CUDA toolkit the recipe pins (e.g. a CUDA 11.8 home)")
    scratch = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    try:
        venv = scratch / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        recipe = str(RECIPES / f"{args.recipe}.toml")
        small = publish(scratch / "world")
        small_row = report(f"fixture build of {args.recipe}", *measure(scratch, small.root, recipe, venv, args.rounds))
        large_row = None
        if args.large_ops > 0:
            large = publish(scratch / "world-large", extra_ops=args.large_ops)
            label = f"larger fixture build: the same with {args.large_ops} generated C files added"
            large_row = report(label, *measure(scratch, large.root, recipe, venv, args.large_rounds))
        goal_lines(small_row, large_row)
        print("srcbuild's cost is fixed (Python start, imports, host probe, checks), so it shrinks as the build grows")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
