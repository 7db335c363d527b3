"""Benchmark: srcbuild's source sync vs ``git clone --recursive`` on a torch-shaped world.

Builds a world of local bare repositories (``tests/worlds/gitworld.py``: 36 submodules plus 5
nested, URLs on github.com reached only through a mirror rule), then times, with the same mirror
configuration for both:

* first sync of ``v1.0.0``: srcbuild with a cold object cache vs ``git clone --recursive``
  (goal: srcbuild no slower, ratio >= 1.0);
* a second tag ``v1.1.0``: srcbuild with the cache warm from the first tag vs a plain
  ``git clone --recursive`` (goal: srcbuild at least 10x faster).

``git clone --recursive --jobs N`` is timed too, for reference. Each case is repeated
``--repeat`` times into fresh directories and the fastest run is reported.

    python bench/bench_source_sync.py [--size BYTES] [--commits N] [--jobs N] [--repeat N]
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from srcbuild.recipe.model import SourcePin  # noqa: E402
from srcbuild.sources.mirrors import parse_mirror_args  # noqa: E402
from srcbuild.sources.sync import SourceSync  # noqa: E402
from tests.worlds.gitworld import isolated_git_env, make_world  # noqa: E402


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
    parser.add_argument("--size", type=int, default=48 * 1024, help="bytes of new text per commit per repository")
    parser.add_argument("--commits", type=int, default=12, help="commits per tag per repository")
    parser.add_argument("--submodules", type=int, default=36)
    parser.add_argument("--jobs", type=int, default=8, help="parallel submodule jobs for srcbuild")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()

    os.environ.update(isolated_git_env())
    scratch = Path(tempfile.mkdtemp(prefix="bench-source-sync-"))
    try:
        start = time.perf_counter()
        world = make_world(scratch / "github", n_submodules=args.submodules, size=args.size, commits=args.commits)
        n_subs = len(world.submodules["v1.0.0"])
        print(
            f"world: {args.submodules} submodules + {n_subs - args.submodules} nested, "
            f"{du(world.root) / 1e6:.0f} MB of packed history, made in {time.perf_counter() - start:.1f}s"
        )
        mirrors = parse_mirror_args([world.mirror_rule], {})
        git_c = ["git", *mirrors.git_config_args()]

        def plain(tag: str, jobs: int | None) -> Callable[[int], None]:
            def run(i: int) -> None:
                dest = scratch / f"plain-{tag}-{jobs}-{i}"
                extra = ["--jobs", str(jobs)] if jobs else []
                subprocess.run(
                    [*git_c, "clone", "--quiet", "--recursive", *extra, "-b", tag, world.top_url, str(dest)],
                    check=True,
                    capture_output=True,
                )

            return run

        def srcbuild(tag: str, warm_from: str | None) -> Callable[[int], None]:
            def run(i: int) -> None:
                work = scratch / f"srcbuild-{tag}-{warm_from}-{i}"
                if warm_from:  # warm the cache with the earlier tag, outside the timed part
                    SourceSync(SourcePin(warm_from, world.top_url), work / "co-warm", work / "cache", mirrors).run()
                sync = SourceSync(SourcePin(tag, world.top_url), work / "co", work / "cache", mirrors, jobs=args.jobs)
                start = time.perf_counter()
                sync.run(log_path=work / "sync.log")
                timings.append(time.perf_counter() - start)
                assert sync.submodule_commits() == dict(world.submodules[tag])

            return run

        results = []
        for label, tag, warm in (
            ("first sync, cold cache", "v1.0.0", None),
            ("second tag, warm cache", "v1.1.0", "v1.0.0"),
        ):
            timings: list[float] = []
            for i in range(args.repeat):
                srcbuild(tag, warm)(i)
            ours = min(timings)
            theirs = best_of(args.repeat, plain(tag, None))
            theirs_jobs = best_of(args.repeat, plain(tag, args.jobs))
            results.append((label, theirs, theirs_jobs, ours))
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    goals = {"first sync, cold cache": 1.0, "second tag, warm cache": 10.0}
    print()
    header = (
        f"{'case':<24} {'git clone --recursive':>22} {f'(--jobs {args.jobs})':>12} {'srcbuild':>9} {'ratio':>7}  goal"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for label, theirs, theirs_jobs, ours in results:
        ratio = theirs / ours
        met = ratio >= goals[label]
        ok = ok and met
        print(
            f"{label:<24} {theirs:>21.2f}s {theirs_jobs:>11.2f}s {ours:>8.2f}s {ratio:>6.1f}x"
            f"  >= {goals[label]:.0f}x {'met' if met else 'NOT met'}"
        )
    print("\nratio = plain git clone --recursive time / srcbuild time (best of", args.repeat, "runs each)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
