"""Benchmark: ``srcbuild mirror create`` on the torch-shaped fixture world, and the ``--dry-run``
estimate of every catalog recipe.

The world (``tests/worlds/gitworld.py``: a top repository with several tags and 36 submodules,
5 nested, reached through a mirror rule) is mirrored for one tag by srcbuild, side by side with
the baseline a user would reach for, ``git clone --mirror`` of every repository the tag needs
(all branches and tags). Printed: the mirror's size and creation time for each, their ratios
(goal: srcbuild's mirror smaller, since it holds only the pinned tag and commits, and not slower),
and the time of a second ``mirror create`` that finds everything there (goal: well under the
first). Then, for each catalog recipe, the ``--dry-run`` estimate from srcbuild's data, split by
kind: NVIDIA's downloads, the package-index wheels the toolchain takes (cuDNN and NCCL from the
``pypi`` provider, the Debian route's component wheels), the Debian packages, and git (an upper
bound); once with the default provider order and once with the Debian route first
(``SRCBUILD_TOOLCHAIN_PROVIDERS=debian``). Conda packages (the environment's and the toolchain's
gcc, MPI, MAGMA) are solved at creation, so their sizes are not estimated: their count is shown.

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
            create = ["mirror", "create", str(target), "--recipe", str(recipe), "--mirror", world.mirror_rule]
            create += ["--no-env", "--skip", "gcc"]  # gcc from conda-forge: not what this measures
            first, _ = srcbuild(
                create,
                env,
            )
            again, out = srcbuild(
                create,
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
        for title, order in (("default providers", ""), ("Debian route first", "debian")):
            print()
            print(f"--dry-run estimate per catalog recipe, {title} (git: at most;")
            print("c/u: conda pieces solved at creation / downloads whose size the data lacks):")
            print(f"  {'recipe':<21}{'NVIDIA':>10}{'index':>10}{'Debian':>10}{'git':>10}{'total':>10}{'c/u':>6}")
            for path in sorted((REPO / "recipes").glob("*.toml")):
                _, out = srcbuild(
                    ["mirror", "create", str(base / "dry"), "--recipe", path.stem, "--dry-run", "--json"],
                    {**env, "SRCBUILD_TOOLCHAIN_PROVIDERS": order},
                )
                (row,) = json.loads(out)
                est = row["estimate"]
                total = est["downloads"] + est["index_wheels"] + est["debian"] + est["repos_at_most"]
                conda = len(row["toolchain_conda"])
                sizes = (est["downloads"], est["index_wheels"], est["debian"], est["repos_at_most"], total)
                unknown = len(est["unknown"]) - conda  # each conda piece is also listed as unknown
                print(f"  {path.stem:<21}" + "".join(f"{human_size(n):>10}" for n in sizes) + f"{conda:>4}/{unknown}")


if __name__ == "__main__":
    main()
