"""The wheel cache at 100 to 100,000 entries: a lookup, ``cache ls`` and ``gc --dry-run``.

Each store holds entries of many fingerprints (a few entries each, like rebuilds with other
arch lists). A hit and a miss through ``WheelCache.lookup`` (it reads only the directory of one
fingerprint) are timed beside a full scan of every manifest, which is what a store without the
fingerprint layout would have to do. Then the commands a user runs on the whole store, as new
processes, CPU seconds (user + system) with the wall time beside: ``srcbuild cache ls --json``,
``srcbuild cache ls`` (the table, to a pipe) and ``srcbuild cache gc --keep N --dry-run``, each
once to write the listing index (``cache/index.py``), then ``--repeat`` times.

Goals: a lookup < 50 ms and flat (the largest store within 2x of the smallest); at 10,000
entries ``cache ls`` and ``gc --dry-run`` <= 1 CPU s; their CPU per entry flat within 2x from
10,000 to the largest store.

    python bench/bench_cache_lookup.py [--sizes 100,10000,100000] [--repeat 5]
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
from measure import Series, load, row, run_child  # noqa: E402

LIST_GOAL = 1.0  # CPU seconds at 10,000 entries
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed programs run


def commands(store: Path) -> dict[str, list[str]]:
    srcbuild = [sys.executable, "-m", "srcbuild"]
    return {
        "cache ls --json": [*srcbuild, "cache", "ls", "--json", "--cache-dir", str(store)],
        "cache ls": [*srcbuild, "cache", "ls", "--cache-dir", str(store)],
        "gc --dry-run": [*srcbuild, "cache", "gc", "--keep", "1000000", "--dry-run", "--cache-dir", str(store)],
    }


def listing(store: Path, repeat: int) -> dict[str, Series]:
    """Each command once (the index is written), then ``repeat`` times, in rotating order."""
    found = {name: Series(f"{name} ({store.name})") for name in commands(store)}
    for argv in commands(store).values():
        run_child(argv, env=ENV)
    names = list(found)
    for n in range(repeat):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            found[name].samples.append(run_child(commands(store)[name], env=ENV))
    return found


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
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(7)
    want = [ComputeCapability(3, 0)]
    rows = []
    lists: dict[int, dict[str, Series]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        for size in sizes:
            cache = WheelCache(Path(tmp) / f"store-{size}")
            fill_start = time.perf_counter()
            fps = fill(cache, size, rng)
            fill_s = time.perf_counter() - fill_start
            probe = fps[len(fps) // 2]
            hit = timed(lambda c=cache, p=probe: c.lookup(p, want), args.repeat * 10)
            miss = timed(lambda c=cache: c.lookup("f" * 64, want), args.repeat * 10)
            scan = timed(
                lambda c=cache, p=probe: [e for e in c.entries() if e.fingerprint == p], max(1, args.repeat // 3)
            )
            rows.append((size, hit, miss, scan, fill_s))
            lists[size] = listing(cache.root, args.repeat)
    print(f"wheel cache lookup (median of {args.repeat * 10}; {os.cpu_count()} CPUs, load {load()})")
    print(f"{'entries':>8}  {'lookup hit':>11}  {'lookup miss':>11}  {'full scan':>10}  {'scan/hit':>9}")
    for size, hit, miss, scan, _ in rows:
        print(f"{size:>8}  {hit:>8.3f} ms  {miss:>8.3f} ms  {scan:>7.1f} ms  {scan / hit:>8.0f}x")
    first, last = rows[0], rows[-1]
    print(f"hit time at {last[0]} entries / at {first[0]} entries: {last[1] / first[1]:.2f}x (flat = about 1x)")
    print(f"whole-store commands, {args.repeat} runs each after one that writes the index; CPU and wall, min / median:")
    for size in sizes:
        for series in lists[size].values():
            print(row(series))
    lookup_ok = all(r[1] < 50 and r[2] < 50 for r in rows) and last[1] / first[1] <= 2
    goal_line(
        f"cache lookup hit at {last[0]:,} entries (median of {args.repeat * 10})",
        f"{last[1]:.2f} ms",
        f"{first[1]:.2f} ms at {first[0]:,}",
        f"{last[1] / first[1]:.2f}x",
        "< 50 ms at every size, within 2x of the smallest store",
        lookup_ok,
        note=f"full scan {last[3]:.0f} ms",
    )
    ok = lookup_ok
    at = 10000 if 10000 in lists else sizes[-1]
    for name in ("cache ls", "cache ls --json", "gc --dry-run"):
        cpu = lists[at][name].cpu()[1]
        met = cpu <= LIST_GOAL if at == 10000 else False
        ok = ok and met
        goal_line(
            f"{name} at {at:,} entries (CPU, median of {args.repeat})",
            f"{cpu:.2f} s",
            f"{lists[sizes[0]][name].cpu()[1]:.2f} s at {sizes[0]:,}",
            f"{cpu / lists[sizes[0]][name].cpu()[1]:.1f}x",
            f"<= {LIST_GOAL:g} CPU s at 10,000 entries",
            met,
            note=f"wall {lists[at][name].wall()[1]:.2f} s; load {load()}",
        )
        if sizes[-1] > at:
            floor = lists[sizes[0]][name].cpu()[1]  # start-up and the rest that does not grow with the store
            per_at = (cpu - floor) / (at - sizes[0])
            per_last = (lists[sizes[-1]][name].cpu()[1] - floor) / (sizes[-1] - sizes[0])
            flat = per_last <= 2 * per_at
            ok = ok and flat
            goal_line(
                f"{name}: CPU per entry at {sizes[-1]:,} vs {at:,}",
                f"{per_last * 1e6:.0f} us",
                f"{per_at * 1e6:.0f} us",
                f"{per_last / per_at:.2f}x",
                "within 2x (flat)",
                flat,
                note=f"above the {sizes[0]:,}-entry run ({floor:.2f} s): start-up and what does not grow",
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
