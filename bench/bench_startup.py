"""Benchmark: how long short srcbuild commands take, against ``python -c pass``, side by side.

Each command runs ``--runs`` times as a child process (``python -m srcbuild ...`` with this
interpreter); the best and the median wall time are printed with the interpreter's own start-up
as the baseline, the CPU seconds the best run took (user + system, children included: the probes
``doctor`` runs), and each command's goal:

* ``srcbuild --help`` <= 0.15 s
* ``srcbuild doctor`` <= 0.25 s
* ``srcbuild recipes list`` (no goal; for comparison)
* ``srcbuild doctor`` on a machine with a GPU (no goal; for comparison): the same command with an
  ``nvidia-smi`` on PATH that answers as a GeForce GTX 1080 on driver 535.183.01 does, so doctor
  also imports and runs the advice for that GPU (official wheels, recipes that fit it), which a
  machine without an NVIDIA GPU skips

The children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from their
environment) after one warm-up run each, as an installed srcbuild runs: pip compiles the modules
when it installs them. Without it every run compiles each module it imports again (0.2 s of
``doctor``'s time here). On a machine other jobs load, the wall time says more about the
neighbours than about srcbuild: the CPU column does not.

    python bench/bench_startup.py --runs 7
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from goal_line import goal_line

COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("python -c pass", [sys.executable, "-c", "pass"], None),
    ("srcbuild --help", [sys.executable, "-m", "srcbuild", "--help"], 0.15),
    ("srcbuild recipes list", [sys.executable, "-m", "srcbuild", "recipes", "list"], None),
    ("srcbuild doctor", [sys.executable, "-m", "srcbuild", "doctor"], 0.25),
    ("doctor, GTX 1080 machine", [sys.executable, "-m", "srcbuild", "doctor"], None),
]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# what `nvidia-smi --query-gpu=name,compute_cap,driver_version,pci.device_id --format=csv,noheader`
# prints on a GTX 1080 (pci 10de:1b80)
FAKE_SMI = "#!/bin/sh\necho 'NVIDIA GeForce GTX 1080, 6.1, 535.183.01, 0x1B8010DE'\n"


def gpu_env(tmp: Path) -> dict[str, str]:
    """``ENV`` with an nvidia-smi that answers as a GTX 1080 first on PATH."""
    bin_dir = tmp / "gpu-bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    return {**ENV, "PATH": f"{bin_dir}{os.pathsep}{ENV.get('PATH', os.defpath)}"}


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env or ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print(f"{'command':24} {'best s':>7} {'median s':>9} {'CPU s':>6} {'vs pass':>8}  goal")
    base: tuple[float, float] | None = None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, argv, goal in COMMANDS:
            env = gpu_env(Path(tmp)) if "GTX 1080" in label else ENV
            run(argv, Path(tmp), env)  # the warm-up: bytecode written, files in the page cache
            runs = sorted(run(argv, Path(tmp), env) for _ in range(args.runs))
            best, median = runs[0], statistics.median(r[0] for r in runs)
            base = base or best
            verdict = "" if goal is None else f"<= {goal} s: {'met' if best[0] <= goal else 'missed'}"
            print(f"{label:24} {best[0]:7.3f} {median:9.3f} {best[1]:6.2f} {best[0] / base[0]:7.1f}x  {verdict}")
            rows.append((label, best, goal))
    assert base is not None
    for label, best, goal in rows:
        if goal is not None:
            goal_line(
                f"{label} (wall, best of {args.runs})",
                f"{best[0]:.3f} s",
                f"{base[0]:.3f} s",
                f"{best[0] / base[0]:.1f}x",
                f"<= {goal} s",
                best[0] <= goal,
                note=f"CPU {best[1]:.2f} s vs {base[1]:.2f} s",
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
