"""A cache hit of ``srcbuild install`` vs plain ``pip install <the same wheel file>`` (goal: within 1.3x).

Both install the same wheel file (the cached one) with ``--no-deps`` into a fresh environment each
round (a copy of one venv, made before the clock starts); the order rotates between rounds.
``srcbuild install`` runs as a user runs it (a new process): it resolves the recipe and
fingerprint, looks the wheel up, checks it fits the target, and the target's pip installs it in
hash-checking mode (pip's check of the wheel against the manifest's sha256 is the one hash). A
plain ``pip install FILE`` hashes the whole file too, for its install record (``direct_url.json``),
but checks it against nothing; the hit's line hands pip the digest in the URL as well, so pip takes
it, once checked, for that record instead of hashing a second time. The in-process column times
the same ``install()`` without srcbuild's start-up. The ``pip --require-hashes`` column is pip
given srcbuild's own requirement line (``hashed_requirement``), without srcbuild; the ``sha256``
column is hashlib's pass over the same file (in pip's 8 KiB reads, CPU seconds): the floor that
hash-checking mode adds to any install of that wheel.
Wheel sizes: a tiny one (fixed costs dominate) and larger ones (real torch wheels are hundreds of MB).
The CPU seconds of both commands (their children included) are printed beside the wall times: on a
shared machine the wall times say more about the neighbours. Two goal lines per size: the goal as
written (within 1.3x of plain ``pip install``, which checks no hash) and the same ratio against pip
in hash-checking mode (what the trust a hit must keep costs by itself). Both sides run with bytecode caching
on (``PYTHONDONTWRITEBYTECODE`` removed), as installed programs run: pip compiled srcbuild's
modules when it installed them.

    python bench/bench_cache_install.py [--rounds 5] [--sizes 0.01,100,500]   # sizes in MB
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from srcbuild.cache.install import hashed_requirement, install, pip_install_argv  # noqa: E402
from srcbuild.cache.manifest import Manifest  # noqa: E402
from srcbuild.cache.store import WheelCache  # noqa: E402
from srcbuild.paths import Paths  # noqa: E402
from srcbuild.recipe import RecipeCatalog  # noqa: E402
from srcbuild.resolve.request import request_fingerprint  # noqa: E402
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from goal_line import goal_line  # noqa: E402

QUIET = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
}
GOAL = 1.3


CPU: dict[str, list[float]] = {"pip": [], "hashed": [], "cli": []}  # CPU seconds of each run, children included


def run(argv: list[str], cpu: list[float] | None = None) -> float:
    """Wall seconds of ``argv``; its CPU seconds (user + system, its children included) go to ``cpu``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=QUIET)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{done.stderr}")
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


def sha256_cpu(path: Path, block: int) -> float:
    """CPU seconds of hashlib's sha256 over ``path`` read in ``block``-byte pieces (the file cached in memory,
    as pip finds it: the one hash of a hit, measured alone)."""
    start = time.process_time()
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(block):
            digest.update(chunk)
    return time.process_time() - start


class Jobs:
    """The three ways of installing one cached wheel into a fresh ``target`` prefix; each returns seconds."""

    def __init__(self, wheel: Path, manifest: Manifest, recipe_file: Path, recipe: object, cache_dir: Path) -> None:
        self.wheel, self.manifest, self.recipe_file, self.recipe = wheel, manifest, recipe_file, recipe
        self.cache_dir = cache_dir

    def pip(self, target: Path) -> float:
        return run([str(target / "bin" / "python"), "-m", "pip", "install", "--no-deps", str(self.wheel)], CPU["pip"])

    def hashed(self, target: Path) -> float:
        """pip in hash-checking mode with the line ``srcbuild install`` hands it, without srcbuild."""
        requirements = target.parent / f"{target.name}.txt"
        requirements.write_text(hashed_requirement(self.manifest, self.wheel))
        return run(pip_install_argv(target / "bin" / "python", requirements), CPU["hashed"])

    def cli(self, target: Path) -> float:
        argv = [sys.executable, "-m", "srcbuild", "install", "torch", "--recipe", str(self.recipe_file)]
        return run([*argv, "--into", str(target), "--cache-dir", str(self.cache_dir)], CPU["cli"])

    def lib(self, target: Path) -> float:
        start = time.perf_counter()
        key = lambda: request_fingerprint(self.recipe, "torch", os.environ)  # type: ignore[arg-type]  # noqa: E731
        python = target / "bin" / "python"
        install(WheelCache(self.cache_dir), self.recipe, "torch", [], python, key, environ=os.environ)  # type: ignore[arg-type]
        return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="0.01,100,500", help="wheel payload sizes in MB")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp_name:
        tmp = Path(tmp_name)
        template = tmp / "venv-template"
        subprocess.run([sys.executable, "-m", "venv", str(template)], check=True)
        recipe_file = host_python_recipe(tmp / "recipes")
        recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
        for size_mb in (float(s) for s in args.sizes.split(",")):
            cache_dir = tmp / f"cache-{size_mb}"
            payload = os.urandom(int(size_mb * 1024 * 1024))
            wheel = make_wheel(tmp / f"dist-{size_mb}", version="1.7.1+cu92.sm30", tag=host_tag(), payload=payload)
            entry = WheelCache(cache_dir).store(wheel, make_manifest(wheel, recipe, platform=None))
            jobs = Jobs(entry.wheel_path, entry.manifest, recipe_file, recipe, cache_dir)
            shutil.copytree(template, tmp / "warm-up", symlinks=True)
            jobs.cli(tmp / "warm-up")  # bytecode written, as an installed srcbuild has it (not timed)
            shutil.rmtree(tmp / "warm-up")
            times: dict[str, list[float]] = {"pip": [], "hashed": [], "cli": [], "lib": []}
            for kept in CPU.values():
                kept.clear()  # not the warm-up's
            for i in range(args.rounds):
                kinds = ["pip", "hashed", "cli", "lib"]
                order = kinds[i % 4 :] + kinds[: i % 4]  # no one always reads cold
                for kind in order:
                    target = tmp / f"{kind}-{size_mb}-{i}"
                    shutil.copytree(template, target, symlinks=True)
                    times[kind].append(getattr(jobs, kind)(target))
                    shutil.rmtree(target)
            pip_times, cli_times, lib_times = times["pip"], times["cli"], times["lib"]
            # pip 23's hash check reads 8 KiB at a time (io.DEFAULT_BUFFER_SIZE); later pips read 1 MiB
            hash_small = statistics.median(sha256_cpu(entry.wheel_path, io.DEFAULT_BUFFER_SIZE) for _ in times["pip"])
            hash_large = statistics.median(sha256_cpu(entry.wheel_path, 1024 * 1024) for _ in times["pip"])
            rows.append(
                (
                    wheel.stat().st_size,
                    statistics.median(pip_times),
                    statistics.median(cli_times),
                    statistics.median(lib_times),
                    statistics.median(CPU["pip"]),
                    statistics.median(CPU["cli"]),
                    statistics.median(times["hashed"]),
                    statistics.median(CPU["hashed"]),
                    hash_small,
                    hash_large,
                )
            )
    startup = statistics.median(run([sys.executable, "-m", "srcbuild", "--version"]) for _ in range(args.rounds))
    print(f"srcbuild install (cache hit) vs pip install of the same wheel; median of {args.rounds} fresh targets each")
    print(f"(srcbuild's own start-up, `srcbuild --version`: {startup:.2f} s; load average {os.getloadavg()[0]:.1f})")
    print(
        "  `srcbuild install` = the command a user runs (a new process: start-up, lookup, fit check, pip with the hash)"
    )
    print("  in-process = the same install() without srcbuild's start-up (what the cache itself costs)")
    print("  pip --require-hashes = pip given srcbuild's requirement line, without srcbuild: hash-checking mode,")
    print("  which checks the wheel against the manifest's sha256 (the one hash of a hit); ratio = srcbuild over it")
    print("  sha256 = hashlib over the same file, CPU seconds, in pip's 8 KiB reads (and in 1 MiB reads)")
    print("  CPU = user + system seconds of the command and its children (pip): what the neighbours' load")
    print("  does not change, where the wall times on a shared machine mostly measure the neighbours")
    print(
        f"{'wheel':>10}  {'pip install':>11}  {'srcbuild install':>16}  {'ratio':>6}  {'in-process':>10}  {'ratio':>6}"
        f"  {'CPU pip':>8}  {'srcbuild':>8}  {'ratio':>6}  {'pip --require-hashes':>20}  {'ratio':>6}"
        f"  {'sha256 8K/1M':>13}"
    )
    worst = worst_hashed = 0.0
    for size, pip_s, cli_s, lib_s, pip_cpu, cli_cpu, hashed_s, hashed_cpu, hash_small, hash_large in rows:
        worst = max(worst, cli_s / pip_s)
        worst_hashed = max(worst_hashed, cli_s / hashed_s)
        label = f"{size / 1024 / 1024:.2f} MB"
        print(
            f"{label:>10}  {pip_s:>9.2f} s  {cli_s:>14.2f} s  {cli_s / pip_s:>5.2f}x"
            f"  {lib_s:>8.2f} s  {lib_s / pip_s:>5.2f}x"
            f"  {pip_cpu:>6.2f} s  {cli_cpu:>6.2f} s  {cli_cpu / pip_cpu:>5.2f}x"
            f"  {hashed_s:>6.2f} s ({hashed_cpu:.2f} CPU)  {cli_s / hashed_s:>5.2f}x"
            f"  {hash_small:>5.2f}/{hash_large:.2f} s"
        )
    print(f"goal: srcbuild install within {GOAL}x of pip install; worst end-to-end ratio {worst:.2f}x")
    print(f"  (against pip in hash-checking mode, the trust a hit keeps: worst {worst_hashed:.2f}x)")
    for size, pip_s, cli_s, lib_s, pip_cpu, cli_cpu, hashed_s, hashed_cpu, hash_small, hash_large in rows:
        mb = f"{size / 1024 / 1024:.2f} MB"
        goal_line(
            f"install hit, {mb} wheel (median of {args.rounds})",
            f"{cli_s:.2f} s",
            f"{pip_s:.2f} s",
            f"{cli_s / pip_s:.2f}x",
            f"<= {GOAL}x pip install",
            cli_s / pip_s <= GOAL,
            note=f"in-process {lib_s / pip_s:.2f}x; CPU {cli_cpu:.2f} s vs {pip_cpu:.2f} s = {cli_cpu / pip_cpu:.2f}x; "
            f"pip --require-hashes {hashed_s:.2f} s ({hashed_cpu:.2f} CPU s) = {hashed_s / pip_s:.2f}x pip install; "
            f"sha256 of the file alone {hash_small:.2f} CPU s (8 KiB reads), {hash_large:.2f} s (1 MiB)",
        )
        goal_line(
            f"hit vs pip --require-hashes, {mb}",
            f"{cli_s:.2f} s",
            f"{hashed_s:.2f} s",
            f"{cli_s / hashed_s:.2f}x",
            f"<= {GOAL}x pip --require-hashes",
            cli_s / hashed_s <= GOAL,
            note=f"the same hit against pip in hash-checking mode (the hit's own line); "
            f"against plain pip install {cli_s / pip_s:.2f}x; CPU {cli_cpu:.2f} s vs {hashed_cpu:.2f} s",
        )
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
