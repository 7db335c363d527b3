"""What checking a cache hit costs: the size+mtime fast path beside a full re-hash of the wheel,
and what hash-checking an installed hit costs.

A cache hit is checked against its manifest's sha256 before it is used. While the wheel's size
and mtime are those recorded when it was last hashed (``stamp.json``), the check is a ``stat``;
otherwise the wheel is hashed again. The first table shows both for a wheel of each size, beside
the time to read the wheel once (what any use of it costs anyway).

``srcbuild install`` hands pip the wheel in hash-checking mode with the manifest's sha256, so the
hit is hashed once, by pip, as it installs it. The second table runs, side by side for each size,
pip installing the wheel plainly (``pip install --no-deps --target T WHEEL``), srcbuild's former
way (its own re-hash, then that plain install) and the hash-checked install (``pip install
--no-deps --require-hashes --target T -r REQ``), each the median of ``--install-repeat`` runs, with
the ratios against the plain install.

A torchvision build copies the cached torch wheel into its build and checks the copy against the
manifest's sha256 (``files.copy_hashed``: the kernel's copy, then one read of the copy from the
page cache). The third table runs, side by side for each size, a plain copy (``shutil.copy2``,
what the step did before), the checked copy (now), and hashing while copying through Python
blocks (the alternative it was measured against), each the median of ``--copy-repeat`` runs,
with the ratios against the plain copy.

    python bench/bench_cache_verify.py [--sizes-mib 64,512] [--repeat 20] [--install-sizes-mib 64,256]
                                       [--copy-sizes-mib 64,512] [--copy-repeat 5]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_cache_lookup import timed  # noqa: E402  (the median-of-runs timer, in ms)

from srcbuild.cache.install import hashed_requirement  # noqa: E402
from srcbuild.cache.store import WheelCache  # noqa: E402
from srcbuild.files import copy_hashed, sha256_file  # noqa: E402
from tests.unit.cache.synthetic import host_tag, make_manifest, make_wheel  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", default="64,512")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--install-sizes-mib", default="64,256", help="'' skips the install table")
    parser.add_argument("--install-repeat", type=int, default=3)
    parser.add_argument("--copy-sizes-mib", default="64,512", help="'' skips the copy table")
    parser.add_argument("--copy-repeat", type=int, default=5)
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
    if args.install_sizes_mib:
        install_table([int(s) for s in args.install_sizes_mib.split(",")], args.install_repeat)
    if args.copy_sizes_mib:
        copy_table([int(s) for s in args.copy_sizes_mib.split(",")], args.copy_repeat)
    return 0


def _copy_through_python(src: Path, dst: Path) -> str:
    """Hash while copying, 1 MiB blocks through Python (the alternative to ``copy_hashed``)."""
    digest = hashlib.sha256()
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        for block in iter(lambda: fin.read(1 << 20), b""):
            digest.update(block)
            fout.write(block)
    return digest.hexdigest()


def copy_table(sizes: list[int], repeat: int) -> None:
    """Plain copy (before), checked copy (now), hashing while copying in Python, side by side."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-verify-copy-") as tmp:
        for mib in sizes:
            wheel = make_wheel(Path(tmp) / f"dist-{mib}", payload=os.urandom(mib << 20))
            expected = sha256_file(wheel)
            target = Path(tmp) / "copy.whl"
            times: dict[str, list[float]] = {"plain": [], "now": [], "python": []}
            for _ in range(repeat):  # interleaved, so drift hits all three alike
                started = time.perf_counter()
                shutil.copy2(wheel, target)
                times["plain"].append(time.perf_counter() - started)
                started = time.perf_counter()
                assert copy_hashed(wheel, target) == expected
                times["now"].append(time.perf_counter() - started)
                started = time.perf_counter()
                assert _copy_through_python(wheel, target) == expected
                times["python"].append(time.perf_counter() - started)
            rows.append((mib, *(statistics.median(times[k]) * 1000 for k in ("plain", "now", "python"))))
    print()
    print(f"copying a hit into a build (median of {repeat}): plain copy (before), copy then hash")
    print("the copy (now), hashing while copying through Python (alternative)")
    print(f"{'wheel':>8}  {'plain':>9}  {'now':>9}  {'python':>9}  {'now/plain':>9}  {'python/plain':>12}")
    for mib, plain, now, python in rows:
        print(
            f"{mib:>4} MiB  {plain:>6.0f} ms  {now:>6.0f} ms  {python:>6.0f} ms  {now / plain:>8.2f}x  "
            f"{python / plain:>11.2f}x"
        )


def _pip(argv: list[str], target: Path) -> float:
    shutil.rmtree(target, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-index",
         "--target", str(target), *argv],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"pip failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def install_table(sizes: list[int], repeat: int) -> None:
    """Plain pip install, re-hash + plain install (before), hash-checked install (now), side by side."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-verify-install-") as tmp:
        for mib in sizes:
            wheel = make_wheel(Path(tmp) / f"dist-{mib}", tag=host_tag(), payload=os.urandom(mib << 20))
            manifest = make_manifest(wheel, platform=None)
            req = Path(tmp) / f"req-{mib}.txt"
            req.write_text(hashed_requirement(manifest, wheel))
            target = Path(tmp) / "target"
            times: dict[str, list[float]] = {"plain": [], "before": [], "now": []}
            for _ in range(repeat):  # interleaved, so drift hits all three alike
                times["plain"].append(_pip([str(wheel)], target))
                started = time.perf_counter()
                assert sha256_file(wheel) == manifest.sha256
                times["before"].append(time.perf_counter() - started + _pip([str(wheel)], target))
                times["now"].append(_pip(["--require-hashes", "-r", str(req)], target))
            rows.append((mib, *(statistics.median(times[k]) for k in ("plain", "before", "now"))))
    print()
    print(f"installing a hit (median of {repeat}): plain pip, srcbuild re-hash + pip (before),")
    print("pip --require-hashes with the manifest's sha256 (now)")
    print(f"{'wheel':>8}  {'plain':>8}  {'before':>8}  {'now':>8}  {'before/plain':>12}  {'now/plain':>9}")
    for mib, plain, before, now in rows:
        print(
            f"{mib:>4} MiB  {plain:>6.2f} s  {before:>6.2f} s  {now:>6.2f} s  {before / plain:>11.2f}x  "
            f"{now / plain:>8.2f}x"
        )


if __name__ == "__main__":
    sys.exit(main())
