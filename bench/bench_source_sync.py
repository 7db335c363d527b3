"""Benchmark: srcbuild's source sync vs ``git clone --recursive`` on a torch-shaped world.

Builds a world of local bare repositories (``tests/worlds/gitworld.py``: 36 submodules plus 5
nested, URLs on github.com reached only through a mirror rule), then times, with the same mirror
configuration for both:

* first sync of ``v1.0.0``: srcbuild with a cold object cache vs ``git clone --recursive``
  (goal: srcbuild no slower, ratio >= 1.0);
* a second tag ``v1.1.0``: srcbuild with the cache warm from the first tag vs a plain
  ``git clone --recursive`` (goal: srcbuild at least 10x faster, or, where the floor below is
  itself over a tenth of a clone so that 10x cannot be reached, within 1.3x of the floor).
  Beside it, the floor: what any sync of that tag must do, in two parts, each timed alone:
  fetching the tag's new objects (srcbuild's own fetch command, into a copy of the warm cache;
  git's server side, upload-pack and pack-objects, runs on this machine for both links) and
  writing its files (``git checkout-index -a`` of the top repository and of every submodule into
  a fresh directory from objects already on disk, as many at a time as there are CPUs).

Each case runs over two links: ``local`` (file:// URLs on this disk: transfers cost almost
nothing, so this measures per-process overhead) and ``network`` (``githttp.py``: git's smart HTTP
on 127.0.0.1 with a shared bandwidth cap and a delay per request, the way users reach GitHub or a
mirror). ``git clone --recursive --jobs N`` is timed too, for reference, and the bytes each side
pulled through the network link are printed. Each case is repeated ``--repeat`` times into fresh
directories and the fastest run is reported, with the CPU seconds of that run (every process it
started, the git server's included, plus srcbuild's own): on a shared machine the wall time
depends on the neighbours (the load average is printed), the CPU seconds much less.

    python bench/bench_source_sync.py [--size BYTES] [--commits N] [--jobs N] [--repeat N]
                                      [--bandwidth-mb MB/s] [--latency-ms MS] [--links local,network]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
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


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and by every child it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``run()``."""
    cpu, start = cpu_seconds(), time.perf_counter()
    run()
    return time.perf_counter() - start, cpu_seconds() - cpu


def best_of(repeat: int, run: Callable[[int], None]) -> tuple[float, float]:
    """The fastest of ``repeat`` runs: (wall seconds, CPU seconds of that run)."""
    return min(timed(lambda i=i: run(i)) for i in range(repeat))  # type: ignore[misc]


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
    rows: list[Row] = []
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

    print(
        f"\nlinks: local = file:// on this disk; network = smart HTTP on 127.0.0.1 at "
        f"{args.bandwidth_mb:g} MB/s with {args.latency_ms:g} ms per request"
    )
    header = (
        f"{'link':<8} {'case':<23} {'git clone --recursive':>21} {f'(--jobs {args.jobs})':>10} "
        f"{'srcbuild':>9} {'ratio':>6} {'floor':>7}  {'goal':<28} {'CPU s (clone/srcbuild)':>22} "
        f"{'MB moved (clone/srcbuild)':>25}"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for row in rows:
        met, goal_text = row.met(), row.goal()
        ok = ok and met
        floor = f"{row.floor:.2f}s" if row.floor else "-"
        moved = f"{row.their_bytes / 1e6:.1f}/{row.our_bytes / 1e6:.1f}" if row.link != "local" else "-"
        print(
            f"{row.link:<8} {row.label:<23} {row.theirs:>20.2f}s {row.theirs_jobs:>9.2f}s {row.ours:>8.2f}s "
            f"{row.ratio:>5.1f}x {floor:>7}  {goal_text:<20} {'met' if met else 'NOT met':<7} "
            f"{f'{row.theirs_cpu:.2f}/{row.ours_cpu:.2f}':>22} {moved:>25}"
        )
        note = f"clone --jobs {args.jobs}: {row.theirs_jobs:.2f} s; CPU s: clone {row.theirs_cpu:.2f}, "
        note += f"srcbuild {row.ours_cpu:.2f}"
        if row.floor:
            note += (
                f"; floor {row.floor:.2f} s (fetch of the new tag {row.floor_fetch:.2f} s + writing its files "
                f"{row.floor_files:.2f} s): srcbuild {row.ours / row.floor:.2f}x it, "
                f"a clone {row.theirs / row.floor:.1f}x"
            )
        goal_line(label_of(row.label, row.link), f"{row.ours:.2f} s", f"{row.theirs:.2f} s clone",
                  f"{row.ratio:.1f}x", goal_text, met, note=note)  # fmt: skip
    print(
        "floor = what any sync of the tag must do, each part timed alone: fetching the tag's new objects into a copy "
        f"of the warm cache, plus writing its files (git checkout-index -a of every repository, {os.cpu_count()} at a "
        f"time). Where the floor is over a tenth of a clone, 10x cannot be reached; the goal is then {FLOOR_GOAL:g}x "
        "the floor"
    )
    print(f"\nratio = plain git clone --recursive / srcbuild (best of {args.repeat} runs each, same mirror rule)")
    return 0 if ok else 1


FIRST_GOAL, SECOND_GOAL, FLOOR_GOAL = 1.0, 10.0, 1.3


@dataclass(frozen=True)
class Row:
    """One case over one link: the clones' and srcbuild's best runs (wall and CPU seconds)."""

    link: str
    label: str
    theirs: float
    theirs_cpu: float
    theirs_jobs: float
    ours: float
    ours_cpu: float
    their_bytes: int
    our_bytes: int
    floor_fetch: float = 0.0
    floor_files: float = 0.0

    @property
    def ratio(self) -> float:
        return self.theirs / self.ours

    @property
    def floor(self) -> float:
        return self.floor_fetch + self.floor_files

    def floor_bound(self) -> bool:
        """The floor alone is over a tenth of a clone: no sync can be 10x faster than a clone here."""
        return bool(self.floor) and self.theirs / self.floor < SECOND_GOAL

    def goal(self) -> str:
        if not self.floor:
            return f">= {FIRST_GOAL:g}x faster than git clone --recursive"
        if self.floor_bound():
            return f"<= {FLOOR_GOAL:g}x the floor (10x: out of reach)"
        return f">= {SECOND_GOAL:g}x faster than git clone --recursive"

    def met(self) -> bool:
        if not self.floor:
            return self.ratio >= FIRST_GOAL
        return self.ratio >= SECOND_GOAL or (self.floor_bound() and self.ours <= FLOOR_GOAL * self.floor)


def label_of(case: str, link: str) -> str:
    return f"source sync, {case} ({link})"


def time_link(
    world: World, scratch: Path, link_name: str, base: str, link: Link | None, args: argparse.Namespace
) -> list[Row]:
    """Time both cases through one link; the mirror rule maps github.com onto ``base``."""
    mirrors = parse_mirror_args([f"https://github.com/={base}"], {})
    git_c = ["git", *mirrors.git_config_args()]
    moved: dict[str, int] = {}

    def count(key: str, run: Callable[[], object]) -> None:
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
    for label, tag, warm in (
        ("first sync, cold cache", "v1.0.0", None),
        ("second tag, warm cache", "v1.1.0", "v1.0.0"),
    ):
        timings: list[tuple[float, float]] = []
        fetches: list[float] = []
        files: list[float] = []
        for i in range(args.repeat):
            work = scratch / f"srcbuild-{tag}-{i}"
            sync = SourceSync(SourcePin(tag, world.top_url), work / "co", work / "cache", mirrors, jobs=args.jobs)
            if warm:  # warm the cache with the earlier tag, outside the timed part
                warming = SourceSync(SourcePin(warm, world.top_url), work / "co-warm", work / "cache", mirrors)
                run_sync(warming, work / "b0")
                fetches.append(fetch_floor(sync, work / "fetch-floor"))
            key = f"srcbuild {tag}"
            timings.append(timed(lambda s=sync, w=work, k=key: count(k, lambda: run_sync(s, w / "build"))))  # type: ignore[misc]
            assert on_disk.submodule_commits(sync, os.environ) == dict(world.submodules[tag])
            if warm:
                files.append(checkout_floor(work / "co", work / "floor"))
        theirs, theirs_cpu = best_of(args.repeat, plain(tag, None))
        theirs_jobs, _ = best_of(args.repeat, plain(tag, args.jobs))
        ours, ours_cpu = min(timings)
        results.append(
            Row(
                link_name,
                label,
                theirs,
                theirs_cpu,
                theirs_jobs,
                ours,
                ours_cpu,
                moved[f"plain {tag} None"],
                moved[f"srcbuild {tag}"],
                min(fetches) if warm else 0.0,
                min(files) if warm else 0.0,
            )
        )
    return results


def fetch_floor(sync: SourceSync, copy: Path) -> float:
    """Seconds to fetch the tag's new objects alone: srcbuild's own fetch command, run in a copy of the
    warm cache's top repository (its submodule repositories already hold every commit of every tag)."""
    shutil.copytree(sync.cache, copy, ignore=lambda d, names: ["modules"] if Path(d) == sync.cache else [])
    fetch = sync.commands()[1]
    assert "fetch" in fetch.argv
    env = fetch.env.apply(os.environ)
    elapsed, _ = timed(lambda: subprocess.run(fetch.argv, cwd=copy, env=env, check=True, capture_output=True))
    shutil.rmtree(copy)
    return elapsed


def checkout_floor(checkout: Path, into: Path) -> float:
    """Seconds to write the files of ``checkout`` (the top repository and every submodule) into a
    fresh directory from objects already on disk, as many repositories at a time as there are CPUs:
    what any sync of this tag must at least do once the objects are there."""
    foreach = ["git", "-C", str(checkout), "submodule", "--quiet", "foreach", "--recursive", 'echo "$displaypath"']
    listed = subprocess.run(foreach, check=True, capture_output=True, text=True).stdout
    repos = "\n".join([".", *listed.splitlines()]) + "\n"
    for repo in repos.split():  # made first: a repository and its submodules must not race for the same directories
        (into / repo).mkdir(parents=True, exist_ok=True)
    script = f'cd "$1" && xargs -P {os.cpu_count() or 1} -I@ git -C @ checkout-index -a --prefix="$2/@/"'
    argv = ["sh", "-c", script, "floor", str(checkout), str(into)]
    elapsed, _ = timed(lambda: subprocess.run(argv, input=repos, text=True, check=True))
    shutil.rmtree(into)
    return elapsed


if __name__ == "__main__":
    raise SystemExit(main())
