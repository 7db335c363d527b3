"""Which compiler cache a build gets, what it is told, and how its counters are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.compiler_cache import SOCKET_PATH_MAX, for_build, launcher_env, resolve_compiler_cache, server_socket
from srcbuild.compiler_cache.ccache import CCACHE
from srcbuild.compiler_cache.dist import client_config_text, parse_dist_status
from srcbuild.compiler_cache.model import CompilerCacheConfig
from srcbuild.compiler_cache.sccache import SCCACHE
from srcbuild.errors import HostError, UsageError
from srcbuild.resolve.decide import compiler_cache_choice, compiler_cache_url_choice, dist_scheduler_choice

WORK = Path("/w")


def resolve(found: dict[str, str], environ: dict[str, str] | None = None, **cli: str | None):
    """The compiler cache as a build decides it: the settings before the probe, then this host."""
    env = environ or {}
    return resolve_compiler_cache(
        named=compiler_cache_choice(cli.get("recipe"), cli.get("kind"), env),
        url=compiler_cache_url_choice(cli.get("url"), env).value,
        dist=dist_scheduler_choice(cli.get("dist"), env).value,
        environ=env,
        work_dir=WORK,
        which=found.get,
    )


def test_default_is_sccache_then_ccache_then_none() -> None:
    both = {"sccache": "/bin/sccache", "ccache": "/bin/ccache"}
    assert resolve(both).kind == "sccache"
    assert resolve({"ccache": "/bin/ccache"}).launcher == "/bin/ccache"
    assert not resolve({}).enabled and resolve({}).label() == "off"
    assert resolve(both, {"SRCBUILD_CCACHE": "0"}).kind == "none"
    assert resolve(both, recipe="ccache").source == "recipe [build] compiler_cache"
    assert resolve(both, {"SRCBUILD_COMPILER_CACHE": "none"}, recipe="ccache").kind == "none"
    assert resolve(both, {"SRCBUILD_COMPILER_CACHE": "none"}, kind="ccache").kind == "ccache"


def test_a_missing_or_unknown_cache_and_bad_urls_are_errors() -> None:
    with pytest.raises(HostError) as missing:
        resolve({}, kind="sccache")
    assert missing.value.hint == "python -m pip install sccache"
    with pytest.raises(UsageError):
        resolve({}, kind="distcc")
    with pytest.raises(UsageError) as secret:
        resolve({"sccache": "/bin/sccache"}, url="redis://:hunter2@host:6379")
    assert "hunter2" not in secret.value.message and "password" in secret.value.message
    with pytest.raises(UsageError) as s3:
        resolve({"ccache": "/bin/ccache"}, kind="ccache", url="s3://b/p")
    assert s3.value.message == "--compiler-cache-url s3://b/p: ccache takes redis:// or http:// or https://"
    with pytest.raises(UsageError):
        resolve({"ccache": "/bin/ccache"}, kind="ccache", dist="http://sched:10600")


def test_sccache_variables_for_s3_redis_and_dist() -> None:
    s3 = resolve(
        {"sccache": "/bin/sccache"},
        {"SRCBUILD_S3_ENDPOINT_URL": "http://127.0.0.1:5000", "AWS_SECRET_ACCESS_KEY": "x"},
        url="s3://lab/torch/cu92",
    )
    env = {name: value for name, value, _ in launcher_env(s3)}
    assert env == {
        "SCCACHE_DIR": "/w/compiler-cache/sccache",
        "SCCACHE_BASEDIRS": "/w",
        "SCCACHE_BUCKET": "lab",
        "SCCACHE_S3_KEY_PREFIX": "torch/cu92/",
        "SCCACHE_REGION": "us-east-1",
        "SCCACHE_ENDPOINT": "http://127.0.0.1:5000",
        "SCCACHE_S3_USE_SSL": "false",
    }
    redis = resolve({"sccache": "/bin/sccache"}, url="redis://127.0.0.1:6390")
    assert ("SCCACHE_REDIS_ENDPOINT", "redis://127.0.0.1:6390") in [(n, v) for n, v, _ in launcher_env(redis)]
    dist = resolve({"sccache": "/bin/sccache"}, dist="http://127.0.0.1:10600")
    assert dist.kind == "sccache" and dist.source == "--dist-scheduler (sccache-dist)"
    assert ("SCCACHE_CONF", "/w/compiler-cache/dist-client.toml") in [(n, v) for n, v, _ in launcher_env(dist)]
    text = client_config_text(dist, "s3cret")
    assert 'scheduler_url = "http://127.0.0.1:10600"\n' in text and 'token = "s3cret"\n' in text


def test_counters() -> None:
    sccache_json = (
        '{"stats":{"compile_requests":5,"cache_hits":{"counts":{"C/C++":3}},"cache_misses":{"counts":{"C/C++":1,'
        '"CUDA":1}},"dist_compiles":{"127.0.0.1:10501":2}},"cache_location":"Local disk"}'
    )
    stats = SCCACHE.parse_stats(sccache_json)
    assert (stats.hits, stats.misses, stats.requests, stats.distributed) == (3, 2, 5, 2)
    assert stats.summary() == "sccache: 3 hit(s), 2 miss(es), 2 distributed"
    before = CCACHE.parse_stats("direct_cache_hit\t4\npreprocessed_cache_hit\t1\ncache_miss\t7\n")
    after = CCACHE.parse_stats("direct_cache_hit\t10\npreprocessed_cache_hit\t1\ncache_miss\t7\n")
    assert after.minus(before).to_json()["hits"] == 6 and after.minus(before).misses == 0
    status = '{"SchedulerStatus":["http://127.0.0.1:10600/",{"num_servers":2,"num_cpus":16,"in_progress":0}]}'
    assert parse_dist_status(status) == (2, 16)
    assert parse_dist_status("error: no scheduler") is None


def test_each_build_has_a_server_socket_of_its_own(tmp_path: Path) -> None:
    config = CompilerCacheConfig(kind="sccache", launcher="/usr/bin/sccache", local_dir=str(tmp_path / "cc"))
    a, b = for_build(config, tmp_path / "builds" / "a-torch"), for_build(config, tmp_path / "builds" / "b-torch")
    assert a.server == str(tmp_path / "builds" / "a-torch" / "sccache.sock") and a.server != b.server
    assert a.server_file == Path(a.server)
    assert ("SCCACHE_SERVER_UDS", a.server) in [(n, v) for n, v, _ in SCCACHE.env(a)]
    # a path too long for sun_path becomes an abstract socket named after it, still one per build
    deep = tmp_path / ("d" * SOCKET_PATH_MAX)
    long_a, long_b = server_socket(deep / "a"), server_socket(deep / "b")
    assert long_a.startswith("\\x00srcbuild-sccache-") and long_a != long_b and len(long_a) < 64
    assert for_build(CompilerCacheConfig(kind="sccache", launcher="x"), deep).server_file is None
    # ccache has no server; off stays off
    assert for_build(CompilerCacheConfig(kind="ccache", launcher="/usr/bin/ccache"), tmp_path).server is None
    assert for_build(CompilerCacheConfig(), tmp_path).server is None
