"""Benchmark: scan a large synthetic CUDA library with ``scan_elf`` and with ``cuobjdump --list-elf``.

The library is a minimal x86-64 ELF whose ``.nv_fatbin`` section is a real fat binary (the
``.nv_fatbin`` of ``tests/fixtures/cuda/axpy.cu`` compiled by nvcc for sm_35, sm_37, sm_50 and
compute_50) repeated until the file reaches the requested size — many small containers, the worst
case for a header walker. Each tool runs in a child process; time is wall clock (best of
``--repeat``), peak memory is the child's ``ru_maxrss`` from ``os.wait4``. A "python baseline" child
imports srcbuild without scanning, so the scan's own memory is the difference.

    python bench/bench_fatbin_scan.py --sizes 256,1024 --cuda-home <CUDA 11.8 home>
    python bench/bench_fatbin_scan.py --sizes 16          # quick run

Without an nvcc (or with ``--synthetic``) the fat binary is synthesized instead of compiled.
The generated files live in a temporary directory and are deleted afterwards.
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

from tests.worlds.wheels import fatbin_container, read_fatbin_section, write_elf  # noqa: E402

SCAN = "import sys; from srcbuild.verify.fatbin import count_entries; print(sum(count_entries(sys.argv[1]).values()))"
BASELINE = "import sys; from srcbuild.verify.fatbin import count_entries; print(0)"


def seed_fatbin(cuda_home: Path | None, work: Path, synthetic: bool) -> tuple[bytes, str]:
    nvcc = cuda_home / "bin" / "nvcc" if cuda_home else None
    if not synthetic and nvcc is not None and nvcc.exists():
        lib = work / "libseed.so"
        argv = [str(nvcc), "-ccbin", os.environ.get("BENCH_CCBIN", "g++-11"), "-Wno-deprecated-gpu-targets"]
        argv += ["-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-cudadevrt", "none"]
        for arch, code in (("35", "sm_35"), ("37", "sm_37"), ("50", "sm_50"), ("50", "compute_50")):
            argv += ["-gencode", f"arch=compute_{arch},code={code}"]
        subprocess.run([*argv, str(ROOT / "tests/fixtures/cuda/axpy.cu"), "-o", str(lib)], check=True)
        return read_fatbin_section(lib), f"nvcc fat binary of axpy.cu ({nvcc})"
    blob = fatbin_container([("sass", 35), ("sass", 37), ("sass", 50), ("ptx", 50)], payload=2048)
    return blob, "synthesized containers (no nvcc)"


def measure(argv: list[str], gnu_time: str | None, work: Path) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in KiB, stdout) of one child process.

    With GNU ``time`` the peak RSS is its ``%M``: the child is forked from the small ``time``
    process. Otherwise it is ``ru_maxrss`` from ``os.wait4``, which on Linux also counts the memory
    of this Python process the child was forked from (a floor of ~20 MiB).
    """
    report = work / "time.out"
    full = [gnu_time, "-f", "%M", "-o", str(report), *argv] if gnu_time else argv
    start = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv[0]} failed ({code}): {out[-400:]}")
    rss = int(report.read_text().split()[-1]) if gnu_time else usage.ru_maxrss
    return elapsed, rss, out


def best_of(argv: list[str], repeat: int, gnu_time: str | None, work: Path) -> tuple[float, int, str]:
    runs = [measure(argv, gnu_time, work) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[0][2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="256,1024", help="file sizes in MiB, comma separated (default 256,1024)")
    parser.add_argument("--cuda-home", type=Path, default=os.environ.get("CUDA_HOME"), help="CUDA 11.8 home")
    parser.add_argument("--synthetic", action="store_true", help="synthesize the fat binary instead of nvcc")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool; the best time is reported")
    args = parser.parse_args()
    cuda_home = Path(args.cuda_home) if args.cuda_home else None
    cuobjdump = cuda_home / "bin" / "cuobjdump" if cuda_home and (cuda_home / "bin" / "cuobjdump").exists() else None
    if cuobjdump is None and shutil.which("cuobjdump"):
        cuobjdump = Path(shutil.which("cuobjdump"))  # type: ignore[arg-type]
    gnu_time = shutil.which("time")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-fatbin-") as tmp:
        work = Path(tmp)
        blob, origin = seed_fatbin(cuda_home, work, args.synthetic)
        print(f"seed: {origin}, {len(blob)} bytes per copy")
        _, base_rss, _ = best_of([sys.executable, "-c", BASELINE], 1, gnu_time, work)
        for size_mib in (int(s) for s in args.sizes.split(",")):
            lib = work / f"libbig{size_mib}.so"
            size = write_elf(lib, blob, max(1, (size_mib << 20) // len(blob)))
            secs, rss, out = best_of([sys.executable, "-c", SCAN, str(lib)], args.repeat, gnu_time, work)
            rows.append((size_mib, "count_entries", secs, size / secs / 1e6, rss, out.strip()))
            if cuobjdump is not None:
                secs, rss, out = best_of([str(cuobjdump), "--list-elf", str(lib)], args.repeat, gnu_time, work)
                entries = sum(1 for line in out.splitlines() if line.startswith("ELF file"))
                rows.append((size_mib, "cuobjdump --list-elf", secs, size / secs / 1e6, rss, f"{entries} ELF"))
            lib.unlink()
    print(f"peak RSS from: {'GNU time %M' if gnu_time else 'os.wait4 ru_maxrss (includes the parent interpreter)'}")
    print(f"python baseline (interpreter + imports, no scan): peak RSS {base_rss / 1024:.1f} MiB")
    print(f"{'size':>8}  {'tool':<22} {'seconds':>8} {'MB/s':>8} {'peak RSS MiB':>13}  entries")
    for size_mib, tool, secs, mbps, rss, entries in rows:
        print(f"{size_mib:>5} MiB  {tool:<22} {secs:>8.2f} {mbps:>8.0f} {rss / 1024:>13.1f}  {entries}")
    if cuobjdump is not None:
        print("ratios (cuobjdump / count_entries):")
        for i in range(0, len(rows), 2):
            ours, theirs = rows[i], rows[i + 1]
            print(f"{ours[0]:>5} MiB  time x{theirs[2] / ours[2]:.2f}   peak RSS x{theirs[4] / ours[4]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
