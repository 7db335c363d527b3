"""A cache hit of ``srcbuild install`` against uv and pip installing the same wheel file.

Three sides install the same wheel (the cached one) with no dependencies into a fresh copy of one
venv each run: ``srcbuild install torch --recipe R --into DIR`` as a user runs it, ``uv pip install
--no-deps --python DIR/bin/python FILE`` (the strongest baseline: what many users now install with;
it checks no hash) and ``DIR/bin/python -m pip install --no-deps FILE``. Runs alternate, the order
rotating.

srcbuild's side is measured both ways a hit runs. With the record of an earlier install of the
same hit (``srcbuild.quick_hit``; the bench's warm-up run writes it, into another venv): the record
is checked by stat and uv installs the wheel. Without one ("decided anew": the record removed
before each run): start-up, recipe, key, lookup, the target's answer, the fit check, then uv in
hash-checking mode with the manifest's sha256. srcbuild's caches (``XDG_CACHE_HOME``) are the
bench's own.

uv keeps what it unpacked in its cache, so uv is measured in the same cache state as srcbuild:
srcbuild and uv each get a cache directory of their own (``UV_CACHE_DIR``), empty for the first
install of each size ("first") and kept for the repeats ("again"). Goals, judged on CPU seconds
(user + system of the command and every process it waited for), median of the per-run ratios:

* a hit <= 1.5x uv's CPU, first install and repeat, at each size (with the record);
* a hit <= 1.0x pip's CPU (decided anew: no record).

Measured before the record (Python 3.11, a 0.01 MiB wheel, load about 6 on two cores): srcbuild's
own process went from 509 to 415 million instructions and the target interpreter's query from 69
to 35 (``os.uname`` instead of importing ``platform``); CPU median 0.26 to 0.24 s first, 0.22 to
0.21 s again, uv 0.08 to 0.11 s, pip 0.6 s: decided anew, a hit cannot come near 1.5x uv (it runs
uv itself, and Python's start with click's import take half of uv's CPU before the recipe is
read), which is why a repeated hit reads its record instead. With the record (5 pairs, load 1.0
to 1.1): 1.23x uv first and 1.33x again at 0.01 MiB, 1.15x and 1.22x at 100 MiB, 0.90x and 1.01x
for the real torch wheel; decided anew 0.46x, 0.61x and 0.59x pip.

Sizes: a tiny wheel (fixed costs), 100 MiB of random payload, and with ``--real`` the real
torch 2.0.1+cu117 wheel (591 MiB) from the real tier's artifact cache (downloaded once).
Wall times and the load average are printed beside the CPU figures.

    python bench/bench_cache_install.py [--pairs 5] [--sizes 0.01,100] [--real]   # sizes in MiB
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from goal_line import goal_line  # noqa: E402
from measure import Sample, Series, load, row, run_child  # noqa: E402

from srcbuild.cache.installer import _find_uv  # noqa: E402
from srcbuild.cache.store import WheelCache  # noqa: E402
from srcbuild.paths import Paths  # noqa: E402
from srcbuild.recipe import RecipeCatalog  # noqa: E402
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel  # noqa: E402

QUIET = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},  # as installed programs run
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
}
UV_GOAL = 1.5
PIP_GOAL = 1.0


# a recipe whose key the real torch 2.0.1+cu117 wheel fits (its version.py: cuda 11.7 and this
# git_version), so it can be stored as a hit of that recipe; the bench's recipe file, not the catalog's
REAL_RECIPE = """name = "bench-torch-201-cu117"
extends = "kepler-k80-cu118"

[torch]
tag = "v2.0.1"
commit = "e9ebda29d87ce0916ab08c06ab26fd3766a870e5"

[toolchain]
python = "3.11"
cuda = "11.7"
"""


def real_wheel() -> Path:
    """The real torch 2.0.1+cu117 wheel, from the real tier's cache (downloaded there once)."""
    from tests.real.artifacts import TORCH_201_CU117, fetch

    return fetch(TORCH_201_CU117)


class Sides:
    """The three ways to install one wheel; each run gets a fresh copy of the template venv."""

    def __init__(self, tmp: Path, template: Path, wheel: Path, recipe_file: Path, cache_dir: Path, uv: str) -> None:
        self.tmp, self.template, self.wheel, self.recipe_file, self.cache_dir, self.uv = (
            tmp, template, wheel, recipe_file, cache_dir, uv,
        )  # fmt: skip
        self.count = 0

    def _target(self) -> Path:
        self.count += 1
        target = self.tmp / f"target-{self.count}"
        shutil.copytree(self.template, target, symlinks=True)
        return target

    def _timed(self, argv: list[str], env: dict[str, str], target: Path) -> Sample:
        try:
            return run_child(argv, env=env)
        finally:
            shutil.rmtree(target)

    def srcbuild(self, uv_cache: Path, record: bool = True) -> Sample:
        """srcbuild's install; ``record``: with the record its warm-up wrote, else without any."""
        target = self._target()
        argv = [sys.executable, "-m", "srcbuild", "install", "torch", "--recipe", str(self.recipe_file)]
        argv += ["--into", str(target), "--cache-dir", str(self.cache_dir), "--no-deps"]
        xdg = self.tmp / "xdg-cache" / ("kept" if record else "anew")
        if not record:
            shutil.rmtree(xdg / "srcbuild" / "hits", ignore_errors=True)
        env = {**QUIET, "UV_CACHE_DIR": str(uv_cache), "SRCBUILD_INSTALLER": "uv", "XDG_CACHE_HOME": str(xdg)}
        return self._timed(argv, env, target)

    def uv_install(self, uv_cache: Path) -> Sample:
        target = self._target()
        argv = [self.uv, "pip", "install", "--no-deps", "--python", str(target / "bin" / "python"), str(self.wheel)]
        return self._timed(argv, {**QUIET, "UV_CACHE_DIR": str(uv_cache)}, target)

    def pip(self) -> Sample:
        target = self._target()
        argv = [str(target / "bin" / "python"), "-m", "pip", "install", "--no-deps", str(self.wheel)]
        return self._timed(argv, QUIET, target)


def ratio_median(a: Series, b: Series) -> float:
    return statistics.median(x.cpu / y.cpu for x, y in zip(a.samples, b.samples))


def measure_size(sides: Sides, label: str, pairs: int) -> None:
    """First installs (empty uv caches), then repeats, each against uv; then against pip."""
    first_ours, first_uv = Series(f"srcbuild install, first ({label})"), Series(f"uv pip install, first ({label})")
    again_ours, again_uv = Series(f"srcbuild install, again ({label})"), Series(f"uv pip install, again ({label})")
    pip_ours, pip_side = Series(f"srcbuild install, anew ({label})"), Series(f"pip install ({label})")
    for n in range(pairs):
        caches = sides.tmp / f"uv-{label}-{n}"
        ours_cache, uv_cache = caches / "srcbuild", caches / "uv"
        order = (0, 1) if n % 2 == 0 else (1, 0)
        for i in order:  # both caches empty: the first install of this wheel on this machine
            (first_ours if i == 0 else first_uv).samples.append(
                sides.srcbuild(ours_cache) if i == 0 else sides.uv_install(uv_cache)
            )
        for i in order:  # both caches hold the wheel now
            (again_ours if i == 0 else again_uv).samples.append(
                sides.srcbuild(ours_cache) if i == 0 else sides.uv_install(uv_cache)
            )
        shutil.rmtree(caches)
        for i in order:  # against pip (srcbuild's uv cache kept empty: the first-install case)
            if i == 0:
                pip_ours.samples.append(sides.srcbuild(caches / "empty", record=False))
                shutil.rmtree(caches)
            else:
                pip_side.samples.append(sides.pip())
    print(f"{label}: {pairs} pairs each, load {load()}; CPU and wall, min / median")
    for series in (first_ours, first_uv, again_ours, again_uv, pip_ours, pip_side):
        print(row(series))
    for what, ours, theirs, goal, name in (
        ("first install", first_ours, first_uv, UV_GOAL, "uv"),
        ("repeat", again_ours, again_uv, UV_GOAL, "uv"),
        ("decided anew", pip_ours, pip_side, PIP_GOAL, "pip"),
    ):
        ratio = ratio_median(ours, theirs)
        goal_line(
            f"install hit vs {name}, {what}, {label}",  # vs uv: from the record
            f"{ours.cpu()[1]:.3f} s",
            f"{theirs.cpu()[1]:.3f} s",
            f"{ratio:.2f}x",
            f"<= {goal}x {name} (CPU, median of pairs)",
            ratio <= goal,
            note=f"wall {ours.wall()[1]:.2f} s vs {theirs.wall()[1]:.2f} s; min CPU {ours.cpu()[0]:.3f} s vs "
            f"{theirs.cpu()[0]:.3f} s; load {load()}",
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--sizes", default="0.01,100", help="random-payload wheel sizes in MiB")
    parser.add_argument("--real", action="store_true", help="also the real torch 2.0.1+cu117 wheel (591 MiB)")
    args = parser.parse_args()
    uv = _find_uv(os.environ)
    if uv is None:
        sys.exit("no uv executable: install srcbuild's dependencies (pip install -e .)")
    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp_name:
        tmp = Path(tmp_name)
        template = tmp / "venv-template"
        subprocess.run([sys.executable, "-m", "venv", str(template)], check=True)
        recipe_file = host_python_recipe(tmp / "recipes")
        recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
        wheels: list[tuple[str, Path]] = []
        for size in (float(s) for s in args.sizes.split(",") if s):
            payload = os.urandom(int(size * 1024 * 1024))
            wheels.append(
                (f"{size:g} MiB", make_wheel(tmp / f"dist-{size}", "torch", "1.7.1", host_tag(), payload=payload))
            )
        if args.real:
            wheels.append(("torch 2.0.1 cu117, 591 MiB", real_wheel()))
        for label, wheel in wheels:
            cache_dir = tmp / f"cache-{len(label)}-{wheel.stat().st_size}"
            this_file, this = recipe_file, recipe
            if wheel.name.startswith("torch-2.0.1"):
                this_file = tmp / "recipes" / "bench-torch-201-cu117.toml"
                this_file.write_text(REAL_RECIPE)
                this = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(this_file))
            sass = tuple(cc.major * 10 + cc.minor for cc in this.gpu.arch)
            manifest = make_manifest(wheel, this, sass=sass, commit=this.torch.commit or "a" * 40, platform=None)
            entry = WheelCache(cache_dir).store(wheel, manifest)
            sides = Sides(tmp, template, entry.wheel_path, this_file, cache_dir, uv)
            # bytecode and srcbuild's caches written, as an installed srcbuild has them; the record kept
            sides.srcbuild(tmp / "warm-up-cache")
            sides.srcbuild(tmp / "warm-up-cache", record=False)
            shutil.rmtree(tmp / "warm-up-cache", ignore_errors=True)
            measure_size(sides, label, args.pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
