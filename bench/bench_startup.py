"""Benchmark: the CPU seconds of short srcbuild commands, each alternated with ``python -c pass``.

Each command runs as a child process (``python -m srcbuild ...`` with this interpreter), in pairs
with the interpreter's own start-up (which goes first swaps each pair; ``bench/measure.py``). Each
side's CPU seconds (user + system of the child and what it waited for: the probes ``doctor``
runs) are printed as min / median, the wall time beside them with the load average. The goals
are judged on the median CPU seconds of the command:

* ``srcbuild --help`` <= 0.06 CPU s
* ``srcbuild doctor`` <= 0.2 CPU s
* ``srcbuild plan torch --recipe kepler-cu92`` <= 0.2 CPU s
* ``srcbuild recommend --gpu "GTX 1080"`` <= 0.2 CPU s
* ``srcbuild recipes list`` and ``doctor`` on a machine with a GPU (no goal; for comparison): the
  second with an ``nvidia-smi`` on PATH that answers as a GeForce GTX 1080 on driver 535.183.01
  does, so doctor also runs the advice for that GPU, which a machine without one skips

Measured (Python 3.11, two cores shared with other work; instructions under callgrind, CPU the
median of 7 alternating runs of the code before and after, at load 5.7 to 6.8 on two cores, which
inflates every CPU figure and makes doctor's vary by 0.05 s from run to run):

=================================  ===========================  ==========================
command                            instructions, before/after   CPU median s, before/after
=================================  ===========================  ==========================
``srcbuild --help``                237 M / 61 M                 0.067 / 0.018
``srcbuild doctor``                783 M / 647 M                0.253 / 0.214
``srcbuild plan torch``            996 M / 691 M                0.298 / 0.205
``srcbuild recommend --gpu``       779 M / 548 M                0.198 / 0.142
=================================  ===========================  ==========================

``python -c pass`` is 40 M instructions. What is left is mostly imports: click (131 M), the
standard library modules srcbuild and its dependencies use (``inspect``, ``typing``, ``uuid``,
``pathlib``), about 0.3 M per module for the import machinery itself, and each record class's
dataclass processing (about 0.7 M). doctor's CPU also holds its probes' (``lspci``, ``docker``,
``nvcc``, ``mpicc``, ``gcc``: about 0.05 s on this machine).

The children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from their
environment) after one warm-up run each, as an installed srcbuild runs: pip compiles the modules
when it installs them. ``--instructions`` also counts each command's instructions once under
``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``), a figure the machine's load changes even less.

    python bench/bench_startup.py --runs 7 [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from goal_line import goal_line
from measure import Sample, Series, alternate, load, ratios, row, run_child

PY = sys.executable
FLOOR = ("python -c pass", [PY, "-c", "pass"])
# label, argv, CPU-seconds goal (None: printed for comparison)
COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("srcbuild --help", [PY, "-m", "srcbuild", "--help"], 0.06),
    ("srcbuild doctor", [PY, "-m", "srcbuild", "doctor"], 0.2),
    ("srcbuild plan torch (kepler-cu92)", [PY, "-m", "srcbuild", "plan", "torch", "--recipe", "kepler-cu92"], 0.2),
    ("srcbuild recommend --gpu 'GTX 1080'", [PY, "-m", "srcbuild", "recommend", "--gpu", "GTX 1080"], 0.2),
    ("srcbuild recipes list", [PY, "-m", "srcbuild", "recipes", "list"], None),
    ("srcbuild doctor, GTX 1080 machine", [PY, "-m", "srcbuild", "doctor"], None),
]
# what `nvidia-smi --query-gpu=name,compute_cap,driver_version,pci.device_id --format=csv,noheader`
# prints on a GTX 1080 (pci 10de:1b80)
FAKE_SMI = "#!/bin/sh\necho 'NVIDIA GeForce GTX 1080, 6.1, 535.183.01, 0x1B8010DE'\n"


def child_env(tmp: Path, gpu: bool) -> dict[str, str]:
    """This environment without ``PYTHONDONTWRITEBYTECODE``, srcbuild's cache and work directories
    in ``tmp``; with ``gpu``, an nvidia-smi that answers as a GTX 1080 first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "SRCBUILD_CONFIG")}
    env.update(SRCBUILD_CACHE_DIR=str(tmp / "cache"), SRCBUILD_WORK_DIR=str(tmp / "work"))
    if gpu:
        bin_dir = tmp / "gpu-bin"
        bin_dir.mkdir(exist_ok=True)
        smi = bin_dir / "nvidia-smi"
        smi.write_text(FAKE_SMI)
        smi.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}"
    return env


def instructions(argv: list[str], env: dict[str, str], cwd: Path) -> int | None:
    """The instructions ``argv`` runs under callgrind (the whole process tree), or None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    out = cwd / "callgrind.out"
    done = subprocess.run(
        [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}.%p", "--trace-children=yes", *argv],
        env={**env, "PYTHONHASHSEED": "0"},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    counts = [int(m.replace(",", "")) for m in re.findall(r"Collected : ([\d,]+)", done.stderr)]
    for path in cwd.glob("callgrind.out.*"):
        path.unlink()
    return sum(counts) if counts else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="pairs per command (default 7)")
    parser.add_argument("--instructions", action="store_true", help="also count instructions under callgrind")
    parser.add_argument("--only", default="", help="commands whose label holds one of these words (comma-separated)")
    args = parser.parse_args()
    words = [w for w in args.only.split(",") if w]
    commands = [c for c in COMMANDS if not words or any(w in c[0] for w in words)]
    print(f"load average {load()}, {os.cpu_count()} CPUs; {args.runs} alternating pairs per command")
    print("  side                                     CPU min / median        wall min / median")
    results: list[tuple[str, Series, Series, float | None, int | None]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        floor_env = child_env(tmp, gpu=False)
        for label, argv, goal in commands:
            env = child_env(tmp, gpu="GTX 1080 machine" in label)

            def command(argv: list[str] = argv, env: dict[str, str] = env) -> Sample:
                return run_child(argv, env=env, cwd=tmp, want=None)

            def floor() -> Sample:
                return run_child(FLOOR[1], env=floor_env, cwd=tmp)

            command()  # the warm-up: bytecode written, files in the page cache
            ours, base = alternate(args.runs, command, floor)
            mine, theirs = Series(label, ours), Series(FLOOR[0], base)
            count = instructions(argv, env, tmp) if args.instructions else None
            print(row(mine) + (f"   {count / 1e6:,.0f} M instructions" if count else ""))
            print(row(theirs) + f"   load {load()}")
            results.append((label, mine, theirs, goal, count))
    for label, mine, theirs, goal, count in results:
        if goal is None:
            continue
        cmin, cmed = mine.cpu()
        bmed = theirs.cpu()[1]
        rmin, rmed = ratios(mine, theirs)
        wmin, wmed = mine.wall()
        note = (
            f"CPU min {cmin:.3f} s; wall min/median {wmin:.3f}/{wmed:.3f} s; "
            f"ratio to python -c pass min/median {rmin:.1f}/{rmed:.1f}x"
        )
        if count:
            note += f"; {count / 1e6:,.0f} M instructions"
        goal_line(
            f"{label} (CPU, median of {args.runs})",
            f"{cmed:.3f} s",
            f"{bmed:.3f} s",
            f"{rmed:.1f}x",
            f"<= {goal} CPU s",
            cmed <= goal,
            note=note,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
