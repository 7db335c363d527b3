"""torch-scatter's build (or another PyG sdist's: ``--sdist``) as it ships (ninja off: one file at
a time) vs with srcbuild's checked edit (``use_ninja=True``, and ``build_ext_at_once.py.in`` before
setup.py: the extensions side by side, ``MAX_JOBS`` compiles at once in all); goal: the edited
build >= 1.8x faster in wall time on 2 cores.

Both sides build the same sdist (torch_scatter-2.1.2.tar.gz from the package index, sha256 checked)
with the same Python, torch, compiler and variables, ``pip wheel --no-build-isolation --no-deps``
from a fresh unpacked copy each round (nothing reused between rounds), the order alternating
between rounds. What differs is exactly the edit ``srcbuild ext`` makes (``extensions.toml``'s
``parallel`` row, applied by ``srcbuild.ext.plan``'s script). ``--cuda-home`` builds the CUDA
libraries for ``--archs`` (``FORCE_ONLY_CUDA=1``, as ``tests/real/test_ext.py``); without it, the
CPU libraries (``FORCE_ONLY_CPU=1``). ``--ninja-alone`` adds the ninja edit without the
extensions side by side (srcbuild's edit before 2026-11-28). ``--nvcc-threads N`` adds a side: the edited build
with ``NVCC_FLAGS=--threads N`` (the package's own switch, read by its setup.py into the nvcc
flags), so that nvcc compiles the gencode targets of one file N at once (nvcc >= 11.2,
``--threads``/``-t``). CPU seconds are the builds' children (user+sys, from
``resource.getrusage``); wall is beside them, with the load average before and after each build:
on a shared machine the wall time says as much about the neighbours.

    python bench/bench_ext_parallel.py --python VENV/bin/python [--cuda-home DIR --archs "3.5;3.7" --gcc 11]
        [--rounds 1] [--jobs 2] [--nvcc-threads 2]

VENV holds the torch to build against (its headers and ``torch.utils.cpp_extension``), setuptools,
wheel and ninja.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from goal_line import goal_line  # noqa: E402

from srcbuild.ext.knowledge import knowledge_for  # noqa: E402
from srcbuild.ext.plan import sdist_top, unpack_argv  # noqa: E402
from srcbuild.ext.source import find_sdist, parse_requirement, pip_indexes  # noqa: E402

GOAL = 1.8
# the sdists measured, pinned (tests/real/artifacts.py has the same)
SDISTS = {
    "torch-scatter==2.1.2": "69b3aa435f2424ac6a1bfb6ff702da6eb73b33ca0db38fb26989c74159258e47",
    "torch-spline-conv==1.2.2": "ed45a81da29f774665dbdd4709d7e534cdf16d2e7006dbd06957f35bd09661b2",
    "torch-cluster==1.6.3": "78d5a930a5bbd0d8788df8c6d66addd68d6dd292fe3edb401e3dacba26308152",
}


def fetch(requirement: str, into: Path) -> Path:
    sdist = find_sdist(parse_requirement(requirement), pip_indexes(sys.executable, dict(os.environ)))
    path = into / sdist.filename
    if not path.is_file():
        urllib.request.urlretrieve(sdist.url, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SDISTS[requirement]:
        sys.exit(f"{path}: sha256 {digest}, expected {SDISTS[requirement]}")
    return path


def build(project: str, python: str, sdist: Path, work: Path, edited: str, env: dict[str, str]
          ) -> tuple[float, float]:
    """One build from a fresh unpacked copy; (wall seconds, CPU seconds of its processes). ``edited``:
    "" as it ships, "ninja" the ninja edit alone (one extension at a time), "all" srcbuild's whole edit
    (ninja, and build_ext_at_once.py.in before setup.py: the extensions side by side)."""
    edit = knowledge_for(project).parallel
    assert edit is not None
    shutil.rmtree(work, ignore_errors=True)
    top = sdist_top(sdist.name)
    sha = hashlib.sha256(sdist.read_bytes()).hexdigest()
    # as it ships: the same script, an edit that changes nothing
    argv = unpack_argv(python, str(sdist), sha, str(work / "src"), edit, edited=bool(edited), prepend=edited == "all")
    subprocess.run(argv, check=True, capture_output=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-cache-dir", "-w", str(work / "dist"),
         str(work / "src" / top)],
        env=env, capture_output=True, text=True,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"the build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True, help="the Python of an environment holding the torch")
    parser.add_argument("--sdist", default="torch-scatter==2.1.2", choices=sorted(SDISTS))
    parser.add_argument("--cuda-home", default=None)
    parser.add_argument("--archs", default="3.5;3.7")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--gcc", default=None, help="the gcc major to compile with (CC, CXX, CUDAHOSTCXX): 11 for 11.8")
    parser.add_argument("--nvcc-threads", type=int, default=0,
                        help="add a side: the edited build with NVCC_FLAGS=--threads N (CUDA builds)")
    parser.add_argument("--ninja-alone", action="store_true",
                        help="add a side: the ninja edit alone, the extensions one after another")
    parser.add_argument("--only-threads", action="store_true",
                        help="with --nvcc-threads: only as it ships against srcbuild's edit + nvcc threads")
    parser.add_argument("--srcbuild-first", action="store_true",
                        help="start the first round with srcbuild's side (to continue an earlier run's alternation)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-ext-parallel-"))
    try:
        sdist = fetch(args.sdist, scratch)
        project = args.sdist.split("==")[0]
        env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "TORCH_CUDA_ARCH_LIST", "NVCC_FLAGS")}
        env.update(MAX_JOBS=str(args.jobs), PATH=f"{Path(args.python).parent}:{env.get('PATH', '')}",
                   PIP_CONSTRAINT=os.devnull)
        if args.gcc:
            env.update(CC=f"gcc-{args.gcc}", CXX=f"g++-{args.gcc}", CUDAHOSTCXX=f"g++-{args.gcc}")
        if args.cuda_home:
            env.update(CUDA_HOME=args.cuda_home, FORCE_CUDA="1", FORCE_ONLY_CUDA="1",
                       TORCH_CUDA_ARCH_LIST=args.archs, PATH=f"{args.cuda_home}/bin:{env['PATH']}")
            what = f"CUDA libraries for {args.archs}"
        else:
            env.update(FORCE_ONLY_CPU="1")
            what = "CPU libraries"
        # each side: its name, which edit is made ("", "ninja", "all"), its extra variables
        sides: list[tuple[str, str, dict[str, str]]] = [("as it ships", "", {})]
        if args.ninja_alone:
            sides.append(("ninja, one ext at a time", "ninja", {}))
        sides.append(("srcbuild's edit", "all", {}))
        if args.nvcc_threads:
            sides.append((f"srcbuild's edit + nvcc -t{args.nvcc_threads}", "all",
                          {"NVCC_FLAGS": f"--threads {args.nvcc_threads}"}))
        if args.only_threads and args.nvcc_threads:
            sides = [sides[0], sides[-1]]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in sides}
        for r in range(args.rounds):
            for name, edited, extra in (sides if (r + args.srcbuild_first) % 2 == 0 else sides[::-1]):
                load = os.getloadavg()[0]
                wall, cpu = build(project, args.python, sdist, scratch / "work", edited, {**env, **extra})
                times[name].append((wall, cpu))
                print(f"round {r + 1} {name:22} wall {wall:8.1f} s  cpu {cpu:8.1f} s  "
                      f"load {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
        for name, _, _ in sides:
            walls = [w for w, _ in times[name]]
            cpus = [c for _, c in times[name]]
            print(f"{name:22} wall min {min(walls):.1f} s median {statistics.median(walls):.1f} s; "
                  f"cpu min {min(cpus):.1f} s median {statistics.median(cpus):.1f} s")
        ship = min(w for w, _ in times["as it ships"])
        for name, _, extra in sides[1:]:
            fast = min(w for w, _ in times[name])
            ratio = ship / fast
            how = f"MAX_JOBS={args.jobs}" + "".join(f", {k}={v}" for k, v in extra.items())
            goal_line(f"{args.sdist} build, {what}, {how} (wall)", f"{fast:.0f} s", f"{ship:.0f} s",
                      f"{ratio:.2f}x", f">= {GOAL}x faster", ratio >= GOAL,
                      "wall time on a shared machine: the load average decides part of it")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
