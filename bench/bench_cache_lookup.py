"""Lookup time of the wheel cache in stores of 100, 1,000 and 10,000 entries (goal: < 50 ms, flat).

Each store holds entries of many fingerprints (a few entries each, like rebuilds with other
arch lists). The table shows a hit and a miss through ``WheelCache.lookup`` (it reads only the
directory of one fingerprint, and checks the hit's wheel against its manifest through the size
and mtime recorded in ``stamp.json``) beside a full scan of every manifest, which is what a store
without the fingerprint layout would have to do.

    python bench/bench_cache_lookup.py [--sizes 100,1000,10000] [--repeat 50]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from srcbuild.cache.key import ResolvedFacts  # noqa: E402
from srcbuild.cache.manifest import MANIFEST_NAME, Manifest  # noqa: E402
from srcbuild.cache.store import STAMP_NAME, WheelCache, stamp_for  # noqa: E402
from srcbuild.capability import ComputeCapability  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from goal_line import goal_line  # noqa: E402

ARCH_SETS = [(30,), (30, 35), (35, 37), (50, 52, 61), (61,)]
PK_SHA = "fcab7fcc2b4cffd9bb45003bfc2e468a04ef6f77ca8200a7341f027631584d25"  # sha256 of the 2-byte stand-in wheel


def fill(cache: WheelCache, n: int, rng: random.Random) -> list[str]:
    """Write ``n`` entries (up to 3 per fingerprint) directly; returns the fingerprints."""
    fps: list[str] = []
    written = 0
    while written < n:
        fp = f"{rng.getrandbits(256):064x}"
        fps.append(fp)
        for i in range(min(rng.randint(1, 3), n - written)):
            sass = ARCH_SETS[rng.randrange(len(ARCH_SETS))]
            resolved = ResolvedFacts.create(source_commit=f"{rng.getrandbits(160):040x}", arch=[str(s) for s in sass])
            manifest = Manifest(
                package="torch",
                version="1.7.1+cu92.sm30",
                wheel="torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl",
                sha256=PK_SHA,
                size=2,
                fingerprint=fp,
                key_inputs={"package": "torch", "cuda": "9.2", "platform": "linux_x86_64-glibc2.36"},
                resolved=resolved.to_json(),
                recipe={"name": "kepler-cu92"},
                toolchain={"gcc": "7.5.0"},
                sass=sass,
                ptx=(),
                created=time.time() - i,
            )
            entry = cache.entry_dir(manifest)
            entry.mkdir(parents=True, exist_ok=True)
            (entry / MANIFEST_NAME).write_text(manifest.dumps())
            (entry / manifest.wheel).write_bytes(b"PK")
            (entry / STAMP_NAME).write_bytes(stamp_for(entry / manifest.wheel, PK_SHA))  # as store() writes it
            written += 1
    return fps


def timed(func, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(7)
    want = [ComputeCapability(3, 0)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        for size in sizes:
            cache = WheelCache(Path(tmp) / f"store-{size}")
            fill_start = time.perf_counter()
            fps = fill(cache, size, rng)
            fill_s = time.perf_counter() - fill_start
            probe = fps[len(fps) // 2]
            hit = timed(lambda c=cache, p=probe: c.lookup(p, want), args.repeat)
            miss = timed(lambda c=cache: c.lookup("f" * 64, want), args.repeat)
            scan = timed(
                lambda c=cache, p=probe: [e for e in c.entries() if e.fingerprint == p], max(3, args.repeat // 10)
            )
            rows.append((size, hit, miss, scan, fill_s))
    print(f"wheel cache lookup (median of {args.repeat}; {os.cpu_count()} CPUs); goal: lookup < 50 ms, flat")
    print(f"{'entries':>8}  {'lookup hit':>11}  {'lookup miss':>11}  {'full scan':>10}  {'scan/hit':>9}  {'goal':>5}")
    for size, hit, miss, scan, _ in rows:
        ok = "ok" if hit < 50 and miss < 50 else "MISSED"
        print(f"{size:>8}  {hit:>8.3f} ms  {miss:>8.3f} ms  {scan:>7.1f} ms  {scan / hit:>8.0f}x  {ok:>5}")
    first, last = rows[0], rows[-1]
    print(f"hit time at {last[0]} entries / at {first[0]} entries: {last[1] / first[1]:.2f}x (flat = about 1x)")
    goal_line(
        f"cache lookup hit at {last[0]:,} entries (median of {args.repeat})",
        f"{last[1]:.2f} ms",
        f"{first[1]:.2f} ms at {first[0]:,}",
        f"{last[1] / first[1]:.2f}x",
        "< 50 ms at every size, flat",
        all(r[1] < 50 and r[2] < 50 for r in rows),
        note=f"full scan {last[3]:.0f} ms",
    )
    return 0 if all(r[1] < 50 and r[2] < 50 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
