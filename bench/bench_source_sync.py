"""Benchmark: srcbuild's source sync vs ``git clone --recursive`` on a torch-shaped world.

Builds a world of local bare repositories (``tests/worlds/gitworld.py``: 36 submodules plus 5
nested, URLs on github.com reached only through a mirror rule), then times, with the same mirror
configuration for both:

* first sync of ``v1.0.0``: srcbuild with a cold object cache vs ``git clone --recursive``
  (goal: srcbuild no slower, ratio >= 1.0);
* a second tag ``v1.1.0``: srcbuild with the cache warm from the first tag vs a plain
  ``git clone --recursive`` (goal: srcbuild at least 10x faster). Beside it, the "checkout
  floor": writing that tag's files alone (``git checkout-index -a`` of the top repository and of
  every submodule into a fresh directory, from objects already on disk), which no sync can go
  below; srcbuild's time over the floor is what fetching the new commits and checking out 42
  repositories one process at a time adds.

Each case runs over two links: ``local`` (file:// URLs on this disk: transfers cost almost
nothing, so this measures per-process overhead) and ``network`` (``githttp.py``: git's smart HTTP
on 127.0.0.1 with a shared bandwidth cap and a delay per request, the way users reach GitHub or a
mirror). ``git clone --recursive --jobs N`` is timed too, for reference, and the bytes each side
pulled through the network link are printed. Each case is repeated ``--repeat`` times into fresh
directories and the fastest run is reported.

    python bench/bench_source_sync.py [--size BYTES] [--commits N] [--jobs N] [--repeat N]
                                      [--bandwidth-mb MB/s] [--latency-ms MS] [--links local,network]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from srcbuild.sources import checkout as on_disk

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from srcbuild.recipe.model import SourcePin  # noqa: E402
from srcbuild.sources.mirrors import parse_mirror_args  # noqa: E402
from srcbuild.sources.sync import SourceSync  # noqa: E402
from tests.integration.sources.through_executor import sync as run_sync  # noqa: E402
from tests.worlds.gitworld import World, isolated_git_env, make_world  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from githttp import Link, serve  # noqa: E402
from goal_line import goal_line  # noqa: E402


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def best_of(repeat: int, run: Callable[[int], None]) -> float:
    times = []
    for i in range(repeat):
        start = time.perf_counter()
        run(i)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=192 * 1024, help="bytes of new text per commit per repository")
    parser.add_argument("--commits", type=int, default=12, help="commits per tag per repository")
    parser.add_argument("--submodules", type=int, default=36)
    parser.add_argument("--jobs", type=int, default=8, help="parallel submodule jobs (srcbuild and the --jobs column)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--bandwidth-mb", type=float, default=10.0, help="MB/s of the simulated network link")
    parser.add_argument("--latency-ms", type=float, default=30.0, help="delay per HTTP request on that link")
    parser.add_argument("--links", default="local,network", help="which links to time: local, network or both")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()

    os.environ.update(isolated_git_env())
    scratch = Path(tempfile.mkdtemp(prefix="bench-source-sync-"))
    rows: list[tuple[str, str, float, float, float, int, int, float]] = []
    try:
        start = time.perf_counter()
        world = make_world(scratch / "github", n_submodules=args.submodules, size=args.size, commits=args.commits)
        n_subs = len(world.submodules["v1.0.0"])
        git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
        print(f"{git_version}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(
            f"world: {args.submodules} submodules + {n_subs - args.submodules} nested, "
            f"{du(world.root) / 1e6:.0f} MB of packed history, made in {time.perf_counter() - start:.1f}s"
        )
        for link_name in args.links.split(","):
            if link_name == "local":
                server, link = None, None
                base = f"file://{world.root}/"
            else:
                server, base, link = serve(world.root, args.bandwidth_mb * 1e6, args.latency_ms / 1000)
            try:
                rows += time_link(world, scratch / link_name, link_name, base, link, args)
            finally:
                if server is not None:
                    server.shutdown()
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    goals = {"first sync, cold cache": 1.0, "second tag, warm cache": 10.0}
    print(
        f"\nlinks: local = file:// on this disk; network = smart HTTP on 127.0.0.1 at "
        f"{args.bandwidth_mb:g} MB/s with {args.latency_ms:g} ms per request"
    )
    header = (
        f"{'link':<8} {'case':<23} {'git clone --recursive':>21} {f'(--jobs {args.jobs})':>10} "
        f"{'srcbuild':>9} {'ratio':>6} {'floor':>7}  {'goal':<22} {'MB moved (clone/srcbuild)':>25}"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for link_name, label, theirs, theirs_jobs, ours, their_bytes, our_bytes, floor in rows:
        ratio = theirs / ours
        met, goal_text = ratio >= goals[label], f">= {goals[label]:g}x faster"
        figure = f"{floor:.2f}s" if floor else "-"
        ok = ok and met
        moved = f"{their_bytes / 1e6:.1f}/{our_bytes / 1e6:.1f}" if link_name != "local" else "-"
        print(
            f"{link_name:<8} {label:<23} {theirs:>20.2f}s {theirs_jobs:>9.2f}s {ours:>8.2f}s {ratio:>5.1f}x"
            f" {figure:>7}  {goal_text:<14} {'met' if met else 'NOT met':<7} {moved:>25}"
        )
        note = f"clone --jobs {args.jobs}: {theirs_jobs:.2f} s"
        if floor:
            note += f"; checkout floor {floor:.2f} s: srcbuild {ours / floor:.1f}x it, a clone {theirs / floor:.1f}x"
        baseline = f"{theirs:.2f} s clone"
        goal_line(label_of(label, link_name), f"{ours:.2f} s", baseline, f"{ratio:.1f}x",
                  goal_text + " than git clone --recursive", met, note=note)  # fmt: skip
    print(
        "floor = writing the tag's files alone (git checkout-index -a of every repository from objects on disk): "
        "no sync can take less"
    )
    print(f"\nratio = plain git clone --recursive / srcbuild (best of {args.repeat} runs each, same mirror rule)")
    return 0 if ok else 1


def label_of(case: str, link: str) -> str:
    return f"source sync, {case} ({link})"


def time_link(
    world: World, scratch: Path, link_name: str, base: str, link: Link | None, args: argparse.Namespace
) -> list[tuple[str, str, float, float, float, int, int, float]]:
    """Time both cases through one link; the mirror rule maps github.com onto ``base``."""
    mirrors = parse_mirror_args([f"https://github.com/={base}"], {})
    git_c = ["git", *mirrors.git_config_args()]
    moved: dict[str, int] = {}

    def count(key: str, run: Callable[[], None]) -> None:
        before = link.bytes if link else 0
        run()
        moved[key] = (link.bytes if link else 0) - before

    def plain(tag: str, jobs: int | None) -> Callable[[int], None]:
        def run(i: int) -> None:
            dest = scratch / f"plain-{tag}-{jobs}-{i}"
            extra = ["--jobs", str(jobs)] if jobs else []
            argv = [*git_c, "clone", "--quiet", "--recursive", *extra, "-b", tag, world.top_url, str(dest)]
            count(f"plain {tag} {jobs}", lambda: subprocess.run(argv, check=True, capture_output=True) and None)

        return run

    results = []
    floors: list[float] = []
    for label, tag, warm in (
        ("first sync, cold cache", "v1.0.0", None),
        ("second tag, warm cache", "v1.1.0", "v1.0.0"),
    ):
        timings: list[float] = []
        for i in range(args.repeat):
            work = scratch / f"srcbuild-{tag}-{i}"
            if warm:  # warm the cache with the earlier tag, outside the timed part
                warming = SourceSync(SourcePin(warm, world.top_url), work / "co-warm", work / "cache", mirrors)
                run_sync(warming, work / "b0")
            sync = SourceSync(SourcePin(tag, world.top_url), work / "co", work / "cache", mirrors, jobs=args.jobs)
            t0 = time.perf_counter()
            count(f"srcbuild {tag}", lambda s=sync, w=work: run_sync(s, w / "build") and None)  # type: ignore[misc]
            timings.append(time.perf_counter() - t0)
            assert on_disk.submodule_commits(sync, os.environ) == dict(world.submodules[tag])
            if warm:
                floors.append(checkout_floor(work / "co", work / "floor"))
        theirs = best_of(args.repeat, plain(tag, None))
        theirs_jobs = best_of(args.repeat, plain(tag, args.jobs))
        results.append(
            (
                link_name,
                label,
                theirs,
                theirs_jobs,
                min(timings),
                moved[f"plain {tag} None"],
                moved[f"srcbuild {tag}"],
                min(floors) if warm else 0.0,
            )
        )
    return results


def checkout_floor(checkout: Path, into: Path) -> float:
    """Seconds to write the files of ``checkout`` (the top repository and every submodule) into a
    fresh directory from objects already on disk: what any sync of this tag must at least do."""
    start = time.perf_counter()
    subprocess.run(["git", "-C", str(checkout), "checkout-index", "-a", f"--prefix={into}/"], check=True)
    foreach = f'git checkout-index -a --prefix="{into}/$displaypath/"'
    subprocess.run(["git", "-C", str(checkout), "submodule", "--quiet", "foreach", "--recursive", foreach], check=True)
    elapsed = time.perf_counter() - start
    shutil.rmtree(into)
    return elapsed


if __name__ == "__main__":
    raise SystemExit(main())
