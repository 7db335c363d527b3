"""Benchmark: ``srcbuild mirror create`` on the torch-shaped fixture world, and the ``--dry-run``
estimate of every catalog recipe.

The world (``tests/worlds/gitworld.py``: a top repository with several tags and 36 submodules,
5 nested, reached through a mirror rule) is mirrored for one tag by srcbuild, side by side with
the baseline a user would reach for, ``git clone --mirror`` of every repository the tag needs
(all branches and tags). Printed: the mirror's size and creation time for each, their ratios
(goal: srcbuild's mirror smaller, since it holds only the pinned tag and commits, and not slower),
and the time of a second ``mirror create`` that finds everything there (goal: well under the
first). Then, for each catalog recipe, the ``--dry-run`` estimate from srcbuild's data.

    python bench/bench_mirror.py [--commits N] [--size BYTES] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from srcbuild.files import human_size  # noqa: E402
from tests.worlds.gitworld import isolated_git_env, make_world  # noqa: E402

TAG = "v1.1.0"


def tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def recipe_file(directory: Path) -> Path:
    path = directory / "bench-world.toml"
    path.write_text(
        f'name = "bench-world"\n[torch]\ntag = "{TAG}"\nrepo = "https://github.com/pytorch/pytorch"\n'
        '[toolchain]\npython = "3.11"\ngcc = "11"\ncuda = "none"\n'
    )
    return path


def srcbuild(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "srcbuild", *argv], env=env, cwd=REPO, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"srcbuild {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
    return elapsed, done.stdout


def baseline(world_root: Path, target: Path, env: dict[str, str]) -> float:
    """``git clone --mirror`` of each repository of the world (every ref), as a user would."""
    start = time.perf_counter()
    for bare in sorted(world_root.rglob("*.git")):
        if (bare / "HEAD").is_file():
            dest = target / bare.relative_to(world_root)
            subprocess.run(["git", "clone", "--quiet", "--mirror", str(bare), str(dest)], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=3, help="commits per tag in each repository")
    parser.add_argument("--size", type=int, default=20000, help="bytes each commit rewrites")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="srcbuild-bench-mirror-") as tmp:
        base = Path(tmp)
        world = make_world(base / "world", commits=args.commits, size=args.size)
        env = {**os.environ, **isolated_git_env(), "SRCBUILD_WORK_DIR": str(base / "work")}
        recipe = recipe_file(base)
        rows = []
        for n in range(args.repeat):
            target = base / f"mirror-{n}"
            first, _ = srcbuild(
                ["mirror", "create", str(target), "--recipe", str(recipe), "--mirror", world.mirror_rule, "--no-env"],
                env,
            )
            again, out = srcbuild(
                ["mirror", "create", str(target), "--recipe", str(recipe), "--mirror", world.mirror_rule, "--no-env"],
                env,
            )
            assert "added 0 files" in out, out
            plain = baseline(world.root, base / f"plain-{n}", env)
            rows.append((first, again, plain, tree_size(target), tree_size(base / f"plain-{n}")))
        first, again, plain, size, plain_size = min(rows)
        print(f"fixture world: 1 top repository at {TAG}, {len(world.repos) - 1} submodule repositories")
        print(f"{'':<28}{'srcbuild':>12}{'git clone --mirror':>20}{'ratio':>8}")
        print(f"{'size':<28}{human_size(size):>12}{human_size(plain_size):>20}{size / plain_size:>8.2f}")
        print(f"{'creation time':<28}{first:>11.2f}s{plain:>19.2f}s{first / plain:>8.2f}")
        print(f"{'second run (nothing new)':<28}{again:>11.2f}s{'':>20}{again / first:>8.2f}")
        print()
        print("--dry-run estimate per catalog recipe (toolchain downloads + git at most):")
        for path in sorted((REPO / "recipes").glob("*.toml")):
            _, out = srcbuild(
                ["mirror", "create", str(base / "dry"), "--recipe", path.stem, "--dry-run", "--json"], env
            )
            (row,) = json.loads(out)
            est = row["estimate"]
            total = est["downloads"] + est["repos_at_most"]
            unknown = f"  ({len(est['unknown'])} unknown)" if est["unknown"] else ""
            print(
                f"  {path.stem:<24}{human_size(est['downloads']):>10} +{human_size(est['repos_at_most']):>9}"
                f" = {human_size(total):>9}{unknown}"
            )


if __name__ == "__main__":
    main()
