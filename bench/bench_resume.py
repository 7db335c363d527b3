"""A resumed build after a failure late in the compile, against the same build re-run by hand.

The fake torch's last library is compiled through a launcher that, with FAKE_TORCH_FAIL_ONCE set,
fails once the way the OOM killer does. ``srcbuild torch --keep-build`` fails there after compiling
everything else. What a user does next is the baseline: ``python setup.py bdist_wheel`` again in
the same tree with the same variables (recorded by the fake torch's FAKE_TORCH_RECORD_ENV), where
ninja rebuilds only what is left. srcbuild's side is ``srcbuild torch --resume``. Each pair fails
two fresh trees and resumes one each way, the order swapping from pair to pair; a full build of the
same recipe is measured in each pair for the fraction that was left.

The ninja edges a run executed are counted in its own section of the build step's log (the failed
run's section also holds the tail srcbuild printed, so only the ninja output of that run counts).
Goals, judged on CPU seconds (user + system of the process tree):

* edges re-run by ``--resume`` <= the edges the failed run left unfinished + 1;
* CPU of ``--resume``, as a share of a full build's, <= 1.2x the share of the edges left;
* CPU of ``--resume`` over the same build re-run by hand in the same tree (the strongest
  baseline: ninja alone decides what is left) <= srcbuild's fixed cost, 0.8 s (as
  bench_overhead judges it): the fixture's remaining compile is a fraction of a second, so the
  per-pair ratio printed beside it is mostly that fixed cost.

    CUDA_HOME=<a CUDA 11.8 toolkit> python bench/bench_resume.py [--pairs 3] [--recipe world-kepler-cu118]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from goal_line import goal_line  # noqa: E402
from measure import Series, load, ratios, row, run_child  # noqa: E402

from tests.integration.execute.world import RECIPES, publish  # noqa: E402

# srcbuild's fixed cost over the same commands by hand, as bench_overhead judges it: start-up,
# probe, resolve, state files, wheel verification and cache store
FIXED_COST_GOAL = 0.8
# ninja's status lines: "[3/12] Building C object ..." (a failed edge is followed by "FAILED:")
NINJA = re.compile(r"^\[(\d+)/(\d+)\] ", re.MULTILINE)
STEP_HEADER = "==> ["  # each run of a step starts its section of the step's log with its header


def sections(build_log: Path) -> list[str]:
    """The build step's log cut at each run's header: one section per run of the step."""
    return build_log.read_text(errors="replace").split("\n" + STEP_HEADER)


def ninja_run(section: str) -> tuple[int, int, int]:
    """(edges started, edges failed, edges in the graph) of the first ``cmake --build`` in a section
    (the failed run's tail, printed again below it, is not counted)."""
    body = section.split("--- last lines of ", 1)[0]
    found = NINJA.findall(body)
    failed = body.count("\nFAILED: ")
    total = int(found[-1][1]) if found else 0
    return len(found), failed, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--recipe", default="world-kepler-cu118")
    args = ap.parse_args()
    if "CUDA_HOME" not in os.environ:
        sys.exit("set CUDA_HOME to the CUDA toolkit the recipe pins (e.g. a CUDA 11.8 home)")
    scratch = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    try:
        world = publish(scratch / "world")
        venv = scratch / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        argv = [sys.executable, "-m", "srcbuild", "torch", "--recipe", str(RECIPES / f"{args.recipe}.toml")]
        argv += ["--mirror", world.mirror_rule, "--env", str(venv), "--keep-build"]
        full, resumed, by_hand = (
            Series("full build (srcbuild torch)"),
            Series("srcbuild torch --resume"),
            Series("setup.py bdist_wheel again, by hand"),
        )
        left: list[int] = []
        totals: list[int] = []
        rerun: list[int] = []
        fractions: list[float] = []

        def env_for(work: Path, marker: Path | None = None) -> dict[str, str]:
            env = {**base_env, "SRCBUILD_WORK_DIR": str(work / "work"), "SRCBUILD_CACHE_DIR": str(work / "cache")}
            env["SRCBUILD_CCACHE"] = "0"
            if marker is not None:
                env["FAKE_TORCH_FAIL_ONCE"] = str(marker)
                env["FAKE_TORCH_RECORD_ENV"] = str(work / "build-env.json")
            return env

        def failed_tree(work: Path) -> dict[str, str]:
            env = env_for(work, work.parent / f"{work.name}-marker")
            run_child(argv, env=env, cwd=REPO, want=5)  # fails late: the last library
            log = next((work / "work" / "builds").glob("*-torch/logs/*-build.log"))
            started, failed, total = ninja_run(sections(log)[0])
            left.append(total - (started - failed))
            totals.append(total)
            return env

        for n in range(args.pairs):
            work = scratch / f"pair-{n}"
            full.samples.append(run_child(argv, env=env_for(work / "full"), cwd=REPO))
            ours_env = failed_tree(work / "ours")
            failed_tree(work / "hand")
            recorded = json.loads((work / "hand" / "build-env.json").read_text())
            ours_log = next((work / "ours" / "work" / "builds").glob("*-torch/logs/*-build.log"))
            hand_argv = [str(venv / "bin" / "python"), "setup.py", "bdist_wheel"]
            for side in ("ours", "hand") if n % 2 == 0 else ("hand", "ours"):
                if side == "ours":
                    resumed.samples.append(run_child([*argv, "--resume"], env=ours_env, cwd=REPO))
                    rerun.append(ninja_run(sections(ours_log)[-1])[0])
                else:
                    by_hand.samples.append(run_child(hand_argv, env=recorded["environ"], cwd=recorded["cwd"]))
            fractions.append(resumed.samples[-1].cpu / full.samples[-1].cpu)
            shutil.rmtree(work)
        print(f"fixture build of {args.recipe}, {args.pairs} pairs (ccache off), load {load()}, min / median:")
        for series in (full, resumed, by_hand):
            print(row(series))
        rmin, rmed = ratios(resumed, by_hand)
        worst_rerun = max(rerun)
        print(f"  edges left unfinished by the failed run: {sorted(left)}; re-run by --resume: {sorted(rerun)}")
        print(f"  --resume / by hand, CPU per pair: min {rmin:.2f}x, median {rmed:.2f}x")
        print(f"  --resume / full build, CPU: median {statistics.median(fractions):.2f}")
        goal_line(
            "resume: ninja edges re-run",
            f"{worst_rerun} edges",
            f"{min(left)} left",
            f"{worst_rerun - min(left):+d}",
            "<= edges left unfinished + 1",
            all(r <= min(left) + 1 for r in rerun),
            note=f"the failed runs left {sorted(left)} edges; --resume ran {sorted(rerun)}",
        )
        total = max(totals)
        share = statistics.median(fractions)
        allowed = 1.2 * min(left) / total
        goal_line(
            "resume: CPU, share of a full build's",
            f"{share:.2f}",
            f"{min(left)}/{total} edges",
            f"{share / (min(left) / total):.2f}x",
            "<= 1.2x the share of edges left",
            share <= allowed,
            note=f"--resume {resumed.cpu()[1]:.2f} s, full build {full.cpu()[1]:.2f} s CPU (medians); load {load()}",
        )
        extra = statistics.median(x.cpu - y.cpu for x, y in zip(resumed.samples, by_hand.samples))
        goal_line(
            "resume: CPU over the same build re-run by hand",
            f"{resumed.cpu()[1]:.2f} s",
            f"{by_hand.cpu()[1]:.2f} s",
            f"{rmed:.2f}x",
            f"<= +{FIXED_COST_GOAL} s CPU (srcbuild's fixed cost)",
            extra <= FIXED_COST_GOAL,
            note=f"+{extra:.2f} s CPU per pair (median); wall {resumed.wall()[1]:.2f} s vs {by_hand.wall()[1]:.2f} s",
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
