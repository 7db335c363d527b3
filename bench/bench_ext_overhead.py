"""``srcbuild ext`` vs a bare ``pip wheel --no-build-isolation`` with the same variables (goal: < 5 %).

Both compile torch-scatter's sdist against the same torch in the same build environment with the
same variables: the bare run takes the build step's argv and variables from
``srcbuild plan ext --format json``, so the only difference is what srcbuild adds around the
compile (resolving the recipe and probing the host, reading the torch, the preflight, checking
the environment's torch, the sdist, verifying and storing the wheel). Each srcbuild round uses a
fresh cache directory, so it compiles; the environment, torch in it and the downloads are made
once, before the clock starts. The order alternates between rounds.

The warm-up of the written CPU recipe builds with BUILD_DOCS=1 (torch-scatter's setup.py then
compiles nothing): it makes the same environment (the recipe's name and pins are the same) in
seconds instead of a whole build.

    python bench/bench_ext_overhead.py [--rounds 1] [--torch 2.13.0+cpu] [--recipe FILE]

Without ``--recipe`` a CPU recipe (Python 3.11, gcc 12) is written; ``--torch`` is fetched from
the index pip is configured with. A CUDA recipe compiles for minutes per arch: pass one with
``--recipe`` (and ``--torch-wheel FILE`` through ``--extra``) to measure that case.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CPU_RECIPE = (
    'name = "bench-ext-cpu"\n[torch]\ntag = "v2.13.0"\n[toolchain]\npython = "3.11"\ngcc = "12"\ncuda = "none"\n'
)
SCATTER = "torch-scatter==2.1.2"


def srcbuild(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "srcbuild", *argv], capture_output=True, text=True, check=False)


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {shlex.join(argv)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return elapsed


def apply(changes: list[dict[str, str]], base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    for c in changes:
        if c["op"] == "set":
            env[c["name"]] = c["value"]
        elif c["op"] == "prepend":
            env[c["name"]] = c["value"] + (os.pathsep + env[c["name"]] if env.get(c["name"]) else "")
        else:
            env.pop(c["name"], None)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--torch", default="2.13.0+cpu")
    parser.add_argument("--recipe", default=None)
    parser.add_argument("--extra", default="", help="more srcbuild ext options, e.g. '--cuda-home DIR'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ext-") as tmp:
        root = Path(tmp)
        recipe = args.recipe or str(root / "bench-ext-cpu.toml")
        warm_recipe = recipe
        if not args.recipe:
            Path(recipe).write_text(CPU_RECIPE)
            (root / "warm").mkdir()
            warm_recipe = str(root / "warm" / "bench-ext-cpu.toml")
            Path(warm_recipe).write_text(CPU_RECIPE + '[build]\nenv = { BUILD_DOCS = "1" }\n')
        work = str(root / "work")
        torch = [] if "--torch-wheel" in args.extra else ["--torch", args.torch]
        common = [SCATTER, "--recipe", recipe, *torch, "--env-backend", "venv", *shlex.split(args.extra),
                  "--work-dir", work]
        # warm-up: the environment, torch, the sdist (and a build, cached in a throw-away directory)
        warm_args = [a if a != recipe else warm_recipe for a in common]
        started = time.perf_counter()
        warm = srcbuild("ext", *warm_args, "--cache-dir", str(root / "warm-cache"))
        print(f"warm-up: {time.perf_counter() - started:.1f}s")
        if warm.returncode != 0:
            raise SystemExit(f"warm-up failed:\n{warm.stdout[-3000:]}{warm.stderr[-3000:]}")
        plan = json.loads(srcbuild("plan", "ext", *common, "--cache-dir", str(root / "warm-cache"), "--json").stdout)
        build = next(s for s in plan["steps"] if s["id"] == "build")["commands"][0]
        dist = Path(plan["dist_dir"])
        bare_dist = root / "bare-dist"
        argv = [a if a != str(dist) else str(bare_dist) for a in build["argv"]]
        env = apply(build["env"], dict(os.environ))
        ours: list[float] = []
        bare: list[float] = []
        for i in range(args.rounds):
            jobs = [
                ("srcbuild", lambda i=i: timed([sys.executable, "-m", "srcbuild", "ext", *common, "--cache-dir",
                                                 str(root / f"cache-{i}")])),
                ("bare", lambda: timed(argv, env=env)),
            ]
            for name, job in jobs if i % 2 == 0 else reversed(jobs):
                (ours if name == "srcbuild" else bare).append(job())
        o, b = statistics.median(ours), statistics.median(bare)
        print(f"{'case':<34}{'srcbuild ext':>14}{'bare pip wheel':>16}{'overhead':>10}")
        case = "torch-scatter 2.1.2, " + ("recipe" if args.recipe else "CPU recipe")
        print(f"{case:<34}{o:>13.1f}s{b:>15.1f}s"
              f"{(o - b) / b * 100:>9.1f}%")
        print(f"rounds: {args.rounds}; goal: under 5 %; load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
