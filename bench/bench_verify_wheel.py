"""Benchmark: ``srcbuild verify`` of a real CUDA wheel against unzip + cuobjdump, side by side.

The baseline is what one would do by hand: ``unzip`` the wheel's libraries into a temporary
directory and run CUDA 11.8's ``cuobjdump --list-elf --list-ptx`` on each library that holds a fat
binary. ``srcbuild verify WHEEL --arch 3.7 --no-cross-check`` streams the same members once (nothing
extracted) and reads kernels, links and symbol versions. Each side runs as child processes; time
is wall clock (best of ``--repeat``), with the CPU seconds (user + system) beside it: on a busy
machine the wall time says more about the neighbours than about the tools. Peak memory is GNU
time's ``%M`` of each child (the largest child for the baseline). Goals (printed with the
figures): verify <= 0.3x the baseline's wall time, at <= 200 MiB peak.

    python bench/bench_verify_wheel.py                        # the real torch 2.0.1+cu117 wheel
    python bench/bench_verify_wheel.py --wheel W.whl --cuda-home <CUDA 11.8 home>

The default wheel is ``tests/real/artifacts.py``'s ``TORCH_201_CU117`` (620 MB; fetched once into
the real tier's cache); the default cuobjdump is the CUDA 11.8 toolkit ``tests/setup.sh``
provisions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/real/artifacts.py imports the tests' conftest
sys.path.insert(0, str(ROOT / "bench"))
from goal_line import goal_line  # noqa: E402

GOAL_RATIO = 0.3
GOAL_MIB = 200
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed srcbuild runs


def timed(argv: list[str], work: Path) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in KiB, CPU seconds) of one child, through GNU time."""
    report = work / "time.out"
    start = time.perf_counter()
    argv = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(report), *argv]
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    wall = time.perf_counter() - start
    peak, user, system = report.read_text().split()[-3:]
    return wall, int(peak), float(user) + float(system)


def baseline(wheel: Path, cuobjdump: Path, work: Path) -> tuple[float, int, float]:
    out = work / "unzipped"
    shutil.rmtree(out, ignore_errors=True)
    wall, peak, cpu = timed(["unzip", "-q", "-o", str(wheel), "*.so*", "*/bin/*", "-d", str(out)], work)
    from srcbuild.verify.fatbin import count_entries

    cuda = [p for p in out.rglob("*.so*") if p.is_file() and count_entries(p)]  # not timed: choosing files
    for lib in cuda:
        w, m, c = timed([str(cuobjdump), "--list-elf", "--list-ptx", str(lib)], work)
        wall, peak, cpu = wall + w, max(peak, m), cpu + c
    shutil.rmtree(out, ignore_errors=True)
    return wall, peak, cpu


def ours(wheel: Path, work: Path) -> tuple[float, int, float]:
    argv = [sys.executable, "-m", "srcbuild", "-q", "verify", str(wheel), "--arch", "3.7", "--no-cross-check"]
    return timed(argv, work)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, default=None)
    cuda118 = Path.home() / ".cache/srcbuild-ci/toolchains/cuda-11.8-debian"
    parser.add_argument("--cuda-home", type=Path, default=cuda118)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if args.wheel is None:
        from tests.real.artifacts import TORCH_201_CU117, fetch

        args.wheel = fetch(TORCH_201_CU117)
    cuobjdump = args.cuda_home / "bin" / "cuobjdump"
    if not cuobjdump.is_file() or not shutil.which("unzip"):
        print(f"needs unzip and {cuobjdump} (tests/setup.sh installs both)", file=sys.stderr)
        return 2
    print(
        f"wheel: {args.wheel.name} ({args.wheel.stat().st_size >> 20} MiB), {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        work = Path(tmp)
        base = min((baseline(args.wheel, cuobjdump, work) for _ in range(args.repeat)), key=lambda r: r[0])
        ours(args.wheel, work)  # the warm-up: bytecode written, as an installed srcbuild has it
        mine = min((ours(args.wheel, work) for _ in range(args.repeat)), key=lambda r: r[0])
    ratio = mine[0] / base[0]
    print(f"{'':28} {'wall s':>8} {'CPU s':>7} {'peak MiB':>9}")
    print(f"{'unzip + cuobjdump (11.8)':28} {base[0]:8.2f} {base[2]:7.2f} {base[1] >> 10:9d}")
    print(f"{'srcbuild verify --arch 3.7':28} {mine[0]:8.2f} {mine[2]:7.2f} {mine[1] >> 10:9d}")
    print(
        f"ratio {ratio:.2f}x (goal <= {GOAL_RATIO}x: {'met' if ratio <= GOAL_RATIO else 'missed'}); "
        f"peak {mine[1] >> 10} MiB (goal <= {GOAL_MIB} MiB: {'met' if mine[1] >> 10 <= GOAL_MIB else 'missed'})"
    )
    label = f"verify {args.wheel.stat().st_size >> 20} MiB wheel"
    cpu = f"CPU {mine[2]:.1f} s vs {base[2]:.1f} s ({mine[2] / base[2]:.2f}x)"
    goal_line(f"{label}: wall", f"{mine[0]:.1f} s", f"{base[0]:.1f} s", f"{ratio:.2f}x",
              f"<= {GOAL_RATIO}x unzip + cuobjdump", ratio <= GOAL_RATIO, note=cpu)  # fmt: skip
    goal_line(f"{label}: peak memory", f"{mine[1] >> 10} MiB", f"{base[1] >> 10} MiB",
              f"{mine[1] / base[1]:.2f}x", f"<= {GOAL_MIB} MiB", mine[1] >> 10 <= GOAL_MIB)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
