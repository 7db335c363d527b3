"""Benchmark: srcbuild's source sync vs what a user would run with git itself, judged on CPU seconds.

Builds a world of local bare repositories (``tests/worlds/gitworld.py``: 36 submodules plus 5
nested, URLs on github.com reached only through a mirror rule), then, with the same mirror
configuration for both sides, runs alternately (the order swapping each repetition):

* first sync of ``v1.0.0``: srcbuild with a cold object cache vs ``git clone --recursive --jobs
  N`` (the strongest first clone a user would run: submodules N at a time). Goal: srcbuild's CPU
  seconds <= 1.2x the clone's (it also fills its object cache, which the next tag reuses);
* a second tag ``v1.1.0``: srcbuild with the cache warm from the first tag vs, in a clone of the
  first tag, ``git fetch origin tag v1.1.0`` + ``git checkout v1.1.0`` + ``git submodule update
  --init --recursive --jobs N`` (the same tree moved to the new tag: only the changed files are
  written). Both sides start from the same objects: the user's tree is a ``--single-branch``
  clone of the first tag (its submodules full clones), as srcbuild's cache holds the first tag's
  history and every submodule's; a plain ``clone -b`` would already hold the second tag's
  objects, leaving its fetch nothing to do, as if the new release had been out when the tree was
  cloned. Goal: srcbuild's CPU seconds <= 1.5x that; srcbuild checks the tag out into a clean
  tree of its own (a build never reuses a tree it cannot vouch for), so it writes every file.
  Beside it, the floor: what any sync of that tag into a new tree must do, in two parts, each
  timed alone: fetching the tag's new objects (srcbuild's own fetch command, into a copy of the
  warm cache) and writing its files (``git checkout-index -a`` of every repository into a fresh
  directory, as many at a time as there are CPUs).

CPU seconds are those of every process a side ran (git's server side, upload-pack and
pack-objects, included: it runs on this machine for both links), plus srcbuild's own. Each side's
min and median are printed with the wall times and the load average; a plain serial ``git clone
--recursive`` is timed once for reference.

Each case runs over two links: ``local`` (file:// URLs on this disk: transfers cost almost
nothing, so this measures per-process overhead) and ``network`` (``githttp.py``: git's smart HTTP
on 127.0.0.1 with a shared bandwidth cap and a delay per request, the way users reach GitHub or a
mirror). The bytes each side pulled through the network link are printed.

    python bench/bench_source_sync.py [--size BYTES] [--commits N] [--jobs N] [--repeat N]
                                      [--bandwidth-mb MB/s] [--latency-ms MS] [--links local,network]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=192 * 1024, help="bytes of new text per commit per repository")
    parser.add_argument("--commits", type=int, default=12, help="commits per tag per repository")
    parser.add_argument("--submodules", type=int, default=36)
    parser.add_argument("--jobs", type=int, default=8, help="parallel submodule jobs (srcbuild and the --jobs column)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs of each side")
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
        f"{'link':<8} {'case':<23} {'baseline CPU':>13} {'srcbuild CPU':>13} {'ratio':>6} "
        f"{'wall (baseline/srcbuild)':>25} {'floor':>7}  goal"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for row in rows:
        met = row.met()
        ok = ok and met
        floor = f"{row.floor:.2f}s" if row.floor else "-"
        print(
            f"{row.link:<8} {row.label:<23} {row.theirs_cpu:>12.2f}s {row.ours_cpu:>12.2f}s {row.ratio:>5.2f}x "
            f"{f'{row.theirs:.2f}s/{row.ours:.2f}s':>25} {floor:>7}  {row.goal()}: {'met' if met else 'NOT met'}"
        )
        note = (
            f"baseline: {row.baseline}; wall medians {row.theirs:.2f} s vs {row.ours:.2f} s; "
            f"serial git clone --recursive {row.serial:.2f} s; load {os.getloadavg()[0]:.1f}"
        )
        if row.link != "local":
            note += f"; MB moved baseline/srcbuild {row.their_bytes / 1e6:.1f}/{row.our_bytes / 1e6:.1f}"
        if row.floor:
            note += (
                f"; floor {row.floor:.2f} s wall (fetch of the new tag {row.floor_fetch:.2f} s + writing its files "
                f"{row.floor_files:.2f} s): srcbuild {row.ours / row.floor:.2f}x it"
            )
        goal_line(label_of(row.label, row.link), f"{row.ours_cpu:.2f} s", f"{row.theirs_cpu:.2f} s",
                  f"{row.ratio:.2f}x", row.goal(), met, note=note)  # fmt: skip
    print(
        "\nCPU seconds, medians of the alternating runs: every process each side ran. floor = what any sync of the "
        "tag into a new tree must do, each part timed alone: fetching the tag's new objects into a copy of the warm "
        f"cache, plus writing its files (git checkout-index -a of every repository, {os.cpu_count()} at a time)"
    )
    return 0 if ok else 1


FIRST_GOAL, SECOND_GOAL = 1.2, 1.5  # srcbuild's CPU over the baseline's


@dataclass(frozen=True)
class Row:
    """One case over one link: the baseline's and srcbuild's medians (wall and CPU seconds)."""

    link: str
    label: str
    baseline: str
    theirs: float
    theirs_cpu: float
    ours: float
    ours_cpu: float
    serial: float
    their_bytes: int
    our_bytes: int
    floor_fetch: float = 0.0
    floor_files: float = 0.0

    @property
    def ratio(self) -> float:
        """srcbuild's CPU over the baseline's."""
        return self.ours_cpu / self.theirs_cpu

    @property
    def floor(self) -> float:
        return self.floor_fetch + self.floor_files

    def goal(self) -> str:
        limit = SECOND_GOAL if self.floor else FIRST_GOAL
        return f"CPU <= {limit:g}x {self.baseline.split(' (')[0]}"

    def met(self) -> bool:
        return self.ratio <= (SECOND_GOAL if self.floor else FIRST_GOAL)


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

    def plain(tag: str, jobs: int | None, name: str, single: bool = False) -> Path:
        dest = scratch / f"plain-{tag}-{jobs}-{name}"
        extra = (["--jobs", str(jobs)] if jobs else []) + (["--single-branch"] if single else [])
        argv = [*git_c, "clone", "--quiet", "--recursive", *extra, "-b", tag, world.top_url, str(dest)]
        count(f"plain {tag} {jobs}", lambda: subprocess.run(argv, check=True, capture_output=True) and None)
        return dest

    def moved_tree(tree: Path, tag: str) -> None:
        """The user's own tree (a clone of the earlier tag) moved to ``tag`` with git alone."""
        for argv in (
            [*git_c, "-C", str(tree), "fetch", "--quiet", "origin", "tag", tag],
            [*git_c, "-C", str(tree), "checkout", "--quiet", tag],
            [*git_c, "-C", str(tree), "submodule", "--quiet", "update", "--init", "--recursive", "--jobs",
             str(args.jobs)],
        ):  # fmt: skip
            subprocess.run(argv, check=True, capture_output=True)

    results = []
    for label, tag, warm in (
        ("first sync, cold cache", "v1.0.0", None),
        ("second tag, warm cache", "v1.1.0", "v1.0.0"),
    ):
        ours: list[tuple[float, float]] = []
        theirs: list[tuple[float, float]] = []
        fetches: list[float] = []
        files: list[float] = []
        for i in range(args.repeat):
            work = scratch / f"srcbuild-{tag}-{i}"
            sync = SourceSync(SourcePin(tag, world.top_url), work / "co", work / "cache", mirrors, jobs=args.jobs)
            if warm:  # the earlier tag, outside the timed part: srcbuild's cache, the user's own clone
                warming = SourceSync(SourcePin(warm, world.top_url), work / "co-warm", work / "cache", mirrors)
                run_sync(warming, work / "b0")
                fetches.append(fetch_floor(sync, work / "fetch-floor"))
                tree = plain(warm, args.jobs, f"tree-{i}", single=True)  # the history srcbuild's cache holds
            key = f"srcbuild {tag}"
            for side in ("ours", "theirs") if i % 2 == 0 else ("theirs", "ours"):
                if side == "ours":
                    ours.append(timed(lambda s=sync, w=work, k=key: count(k, lambda: run_sync(s, w / "build"))))  # type: ignore[misc]
                    assert on_disk.submodule_commits(sync, os.environ) == dict(world.submodules[tag])
                elif warm:
                    theirs.append(timed(lambda t=tree, g=tag: count(f"moved {g}", lambda: moved_tree(t, g))))  # type: ignore[misc]
                else:
                    theirs.append(timed(lambda n=f"clone-{i}", g=tag: plain(g, args.jobs, n)))  # type: ignore[misc]
            if warm:
                files.append(checkout_floor(work / "co", work / "floor"))
        serial, _ = timed(lambda g=tag: plain(g, None, "serial"))  # type: ignore[misc]
        baseline = (
            f"git fetch + checkout + submodule update --jobs {args.jobs} (in a single-branch tree of {warm})"
            if warm
            else f"git clone --recursive --jobs {args.jobs}"
        )
        results.append(
            Row(
                link_name,
                label,
                baseline,
                statistics.median(w for w, _ in theirs),
                statistics.median(c for _, c in theirs),
                statistics.median(w for w, _ in ours),
                statistics.median(c for _, c in ours),
                serial,
                moved[f"moved {tag}" if warm else f"plain {tag} {args.jobs}"],
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
