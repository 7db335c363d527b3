"""What checking a cache hit costs: the size+mtime fast path beside a full re-hash of the wheel.

A cache hit is checked against its manifest's sha256 before it is used. While the wheel's size
and mtime are those recorded when it was last hashed (``stamp.json``), the check is a ``stat``;
otherwise the wheel is hashed again. The table shows both for a wheel of each size, beside the
time to read the wheel once (what any use of it costs anyway).

    python bench/bench_cache_verify.py [--sizes-mib 64,512] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_cache_lookup import timed  # noqa: E402  (the median-of-runs timer, in ms)

from srcbuild.cache.store import WheelCache  # noqa: E402
from tests.unit.cache.synthetic import make_manifest, make_wheel  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", default="64,512")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        for mib in (int(s) for s in args.sizes_mib.split(",")):
            wheel = make_wheel(Path(tmp) / f"dist-{mib}", payload=os.urandom(mib << 20))
            cache = WheelCache(Path(tmp) / f"store-{mib}")
            entry = cache.store(wheel, make_manifest(wheel))
            fast = timed(lambda c=cache, e=entry: c.lookup(e.fingerprint, [], None), args.repeat)

            def touched(c: WheelCache = cache, path: Path = entry.wheel_path, fp: str = entry.fingerprint) -> None:
                st = os.stat(path)
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
                c.lookup(fp, [], None)

            full = timed(touched, max(3, args.repeat // 5))
            read = timed(lambda p=entry.wheel_path: p.read_bytes(), max(3, args.repeat // 5))
            rows.append((mib, fast, full, read))
    print(f"cache hit check (median; {os.cpu_count()} CPUs); the fast path should cost nothing next to a read")
    print(f"{'wheel':>8}  {'fast path':>10}  {'re-hash':>10}  {'read once':>10}  {'re-hash/fast':>12}")
    for mib, fast, full, read in rows:
        print(f"{mib:>4} MiB  {fast:>7.3f} ms  {full:>7.1f} ms  {read:>7.1f} ms  {full / fast:>11.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
