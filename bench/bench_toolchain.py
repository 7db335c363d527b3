"""Provisioning costs: a second recipe that needs an already provisioned toolkit (goal: near zero),
and a download cut off at 50 % then resumed (goal: the resume fetches <= 55 % of the file).

Both run against a 127.0.0.1 stand-in of NVIDIA's download site built from a real CUDA 11.8 home
(``SRCBUILD_TEST_CUDA118``, as the tests use): redist component archives and a runfile.

- reuse: recipe kepler-k80-cu118 provisions its CUDA (redist route: fetch, verify, unpack, check
  nvcc), then kepler-k80-cu118-mpi asks for the same pin; time and bytes fetched side by side.
- resume: the runfile's first download is cut at 50 %; the second run continues with a range
  request. Bytes fetched by the resume vs a full download of the same file.

    python bench/bench_toolchain.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from srcbuild.errors import SrcbuildError  # noqa: E402
from srcbuild.paths import Paths  # noqa: E402
from srcbuild.recipe import RecipeCatalog  # noqa: E402
from srcbuild.toolchain.providers.base import Request  # noqa: E402
from srcbuild.toolchain.provision import provision  # noqa: E402
from srcbuild.toolchain.session import open_session  # noqa: E402
from tests.worlds.nvidia_site import RUNFILE_PATH, SiteServer, build_site  # noqa: E402


def cuda_home() -> Path:
    candidates = [os.environ.get("SRCBUILD_TEST_CUDA118", ""), str(Path.home() / ".cache/srcbuild-ci/cuda-11.8")]
    candidates.append(str(Path.home() / ".cache/srcbuild-ci/toolchains/cuda-11.8-debian"))
    for candidate in candidates:
        if candidate and (Path(candidate) / "bin" / "nvcc").exists():
            return Path(candidate)
    sys.exit("needs a CUDA 11.8 home: `srcbuild toolchain install cuda 11.8 --from debian`, SRCBUILD_TEST_CUDA118")


def reuse(base: Path, server: SiteServer) -> None:
    paths = Paths.resolve(work_dir=base / "work", environ=os.environ)
    catalog = RecipeCatalog(paths)
    rows = []
    for name in ("kepler-k80-cu118", "kepler-k80-cu118-mpi"):
        recipe = catalog.load(name)
        assert recipe.toolchain.cuda is not None
        session = open_session(paths, stream=open(os.devnull, "w"), environ=os.environ)  # noqa: SIM115
        sent_before = sum(server.state.sent.values())
        start = time.perf_counter()
        outcome = provision(Request("cuda", recipe.toolchain.cuda), session.facts, session.store, session.ctx, "redist")
        seconds = time.perf_counter() - start
        rows.append((name, seconds, sum(server.state.sent.values()) - sent_before, outcome.reused))
    print("reuse: the same CUDA 11.8 pin from two recipes (redist route)")
    print(f"  {'recipe':<24} {'seconds':>9} {'bytes fetched':>14}  reused")
    for name, seconds, fetched, reused in rows:
        print(f"  {name:<24} {seconds:>9.3f} {fetched:>14,}  {reused}")
    first, second = rows[0][1], rows[1][1]
    print(f"  second / first: {second / first:.4f} of the time, {rows[1][2]} bytes (goal: near zero)")


def resume(base: Path, server: SiteServer, size: int) -> None:
    paths = Paths.resolve(work_dir=base / "work-resume", environ=os.environ)
    session = open_session(paths, stream=open(os.devnull, "w"), environ=os.environ)  # noqa: SIM115
    server.state.cut_after[RUNFILE_PATH] = size // 2
    before = server.state.sent.get(RUNFILE_PATH, 0)
    try:
        provision(Request("cuda", "11.8"), session.facts, session.store, session.ctx, "runfile")
        raise SystemExit("the cut-off download did not fail")
    except SrcbuildError as exc:
        first_try = server.state.sent.get(RUNFILE_PATH, 0) - before
        print(f"resume: first try stopped: {exc.message[:70]}...")
    mid = server.state.sent.get(RUNFILE_PATH, 0)
    provision(Request("cuda", "11.8"), session.facts, session.store, session.ctx, "runfile")
    resumed = server.state.sent.get(RUNFILE_PATH, 0) - mid
    print(f"  {'':<28} {'bytes':>12} {'of the file':>12}")
    print(f"  {'full download (baseline)':<28} {size:>12,} {1:>12.0%}")
    print(f"  {'cut off at 50 %':<28} {first_try:>12,} {first_try / size:>12.0%}")
    print(f"  {'resumed (range request)':<28} {resumed:>12,} {resumed / size:>12.0%}  (goal: <= 55 %)")


def main() -> None:
    home = cuda_home()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        site = build_site(base / "site", home, base / "data")
        os.environ["SRCBUILD_TOOLCHAIN_DATA"] = str(site.data_dir)
        with SiteServer(site.root) as server:
            os.environ["SRCBUILD_NVIDIA_MIRROR"] = server.url
            reuse(base, server)
            resume(base, server, (site.root / RUNFILE_PATH).stat().st_size)


if __name__ == "__main__":
    main()
