"""Benchmark: ``srcbuild verify`` of a real CUDA wheel against the lean unzip + cuobjdump, alternated.

The baseline is the least one would do by hand: ``unzip`` only the wheel's libraries that hold
device code (chosen before timing) into a temporary directory and run CUDA 11.8's ``cuobjdump
--list-elf --list-ptx`` on each. srcbuild runs in both of its default modes: without a cuobjdump
(``--no-cross-check``: the wheel's members streamed once, nothing extracted; kernels, links and
symbol versions read) and with one (``--cuda-home``: every library with device code also listed
by cuobjdump, piece by piece). The sides run alternately (``bench/measure.py``), each through GNU
time, whose ``%M`` is the largest resident set of the process and of every child it waited for;
CPU seconds are user + system of the whole tree. Goals, judged on the median CPU seconds with the
wall time and load beside them:

* verify without the cross-check <= 0.3x the baseline's CPU seconds;
* verify <= 200 MiB peak in both modes (the baseline's own cuobjdump peaks at about 3.2 GiB on
  ``libtorch_cuda.so``).

    python bench/bench_verify_wheel.py [--pairs 3] [--wheel W.whl] [--cuda-home <CUDA 11.8 home>]

The default wheel is ``tests/real/artifacts.py``'s ``TORCH_201_CU117`` (620 MB; fetched once into
the real tier's cache); the default cuobjdump is the CUDA 11.8 toolkit ``tests/setup.sh``
provisions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/real/artifacts.py imports the tests' conftest
sys.path.insert(0, str(ROOT / "bench"))
from goal_line import goal_line  # noqa: E402
from measure import Sample, Series, alternate, load, ratios, row, run_child  # noqa: E402

GOAL_RATIO = 0.3
GOAL_MIB = 200
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed srcbuild runs


class Peaks:
    """The peak resident set (KiB) of each run of one side, read from GNU time's report."""

    def __init__(self) -> None:
        self.kib: list[int] = []

    def timed(self, argv: list[str], work: Path, want: int | None = None) -> Sample:
        report = work / "time.out"
        sample = run_child(["/usr/bin/time", "-f", "%M", "-o", str(report), *argv], env=ENV, cwd=work, want=want)
        self.kib.append(int(report.read_text().split()[-1]))
        return sample

    def mib(self) -> int:
        return max(self.kib) >> 10


def cuda_members(wheel: Path, work: Path) -> list[str]:
    """The wheel's members that hold device code (extracted once to look, before any timing)."""
    from srcbuild.verify.fatbin import count_entries

    found = []
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if ".so" not in info.filename.rsplit("/", 1)[-1]:
                continue
            path = Path(zf.extract(info, work / "look"))
            try:
                if count_entries(path):
                    found.append(info.filename)
            except Exception:  # not an ELF file: not the baseline's business
                pass
            path.unlink()
    shutil.rmtree(work / "look", ignore_errors=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, default=None)
    cuda118 = Path.home() / ".cache/srcbuild-ci/toolchains/cuda-11.8-debian"
    parser.add_argument("--cuda-home", type=Path, default=cuda118)
    parser.add_argument("--pairs", type=int, default=3, help="alternating runs of each side (default 3)")
    parser.add_argument("--repeat", type=int, default=None, help=argparse.SUPPRESS)  # the old name of --pairs
    args = parser.parse_args()
    pairs = args.repeat or args.pairs
    if args.wheel is None:
        from tests.real.artifacts import TORCH_201_CU117, fetch

        args.wheel = fetch(TORCH_201_CU117)
    cuobjdump = args.cuda_home / "bin" / "cuobjdump"
    if not cuobjdump.is_file() or not shutil.which("unzip") or not Path("/usr/bin/time").is_file():
        print(f"needs unzip, GNU time and {cuobjdump} (tests/setup.sh installs them)", file=sys.stderr)
        return 2
    wheel = args.wheel
    print(f"wheel: {wheel.name} ({wheel.stat().st_size >> 20} MiB), {os.cpu_count()} cores, load average {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        work = Path(tmp)
        members = cuda_members(wheel, work)
        print(f"baseline: unzip {', '.join(members)}; cuobjdump each")
        base_peaks, lean_peaks, cross_peaks = Peaks(), Peaks(), Peaks()

        def baseline() -> Sample:
            out = work / "unzipped"
            total = base_peaks.timed(["unzip", "-q", "-o", str(wheel), *members, "-d", str(out)], work, want=0)
            for member in members:
                listed = base_peaks.timed([str(cuobjdump), "--list-elf", "--list-ptx", str(out / member)], work)
                total = Sample(total.wall + listed.wall, total.cpu + listed.cpu)
            shutil.rmtree(out, ignore_errors=True)
            return total

        verify = [sys.executable, "-m", "srcbuild", "-q", "verify", str(wheel), "--arch", "3.7"]

        def lean() -> Sample:
            return lean_peaks.timed([*verify, "--no-cross-check"], work)

        def cross() -> Sample:
            return cross_peaks.timed([*verify, "--cuda-home", str(args.cuda_home)], work)

        lean()  # the warm-up: bytecode written, as an installed srcbuild has it
        lean_peaks.kib.clear()
        ours, theirs = alternate(pairs, lean, baseline)
        checked = [cross() for _ in range(max(1, pairs // 2))]
    mine = Series("srcbuild verify --no-cross-check", ours)
    base = Series("unzip CUDA libraries + cuobjdump (11.8)", theirs)
    both = Series("srcbuild verify --cuda-home (cross-check)", checked)
    print("  side                                     CPU min / median        wall min / median")
    for series, peaks in ((mine, lean_peaks), (base, base_peaks), (both, cross_peaks)):
        print(f"{row(series)}   peak {peaks.mib()} MiB")
    rmin, rmed = ratios(mine, base)
    print(f"CPU ratio verify / baseline: min {rmin:.2f}x, median {rmed:.2f}x; load {load()}")
    label = f"verify {wheel.stat().st_size >> 20} MiB wheel"
    cmed, bmed = mine.cpu()[1], base.cpu()[1]
    wall = f"wall median {mine.wall()[1]:.1f} s vs {base.wall()[1]:.1f} s"
    goal_line(f"{label}: CPU (median of {pairs})", f"{cmed:.2f} s", f"{bmed:.2f} s", f"{rmed:.2f}x",
              f"<= {GOAL_RATIO}x unzip + cuobjdump CPU", rmed <= GOAL_RATIO,
              note=f"ratio min {rmin:.2f}x; {wall}")  # fmt: skip
    goal_line(f"{label}: peak memory", f"{lean_peaks.mib()} MiB", f"{base_peaks.mib()} MiB",
              f"{lean_peaks.mib() / max(1, base_peaks.mib()):.2f}x", f"<= {GOAL_MIB} MiB",
              lean_peaks.mib() <= GOAL_MIB)  # fmt: skip
    cross_cpu = statistics.median(s.cpu for s in checked)
    goal_line(f"{label} with the cuobjdump cross-check: peak memory", f"{cross_peaks.mib()} MiB",
              f"{base_peaks.mib()} MiB", f"{cross_peaks.mib() / max(1, base_peaks.mib()):.2f}x",
              f"<= {GOAL_MIB} MiB", cross_peaks.mib() <= GOAL_MIB,
              note=f"CPU median {cross_cpu:.2f} s (cuobjdump's own work included)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
