"""A mirror of the fixture world (its git remotes and the loopback stand-in for NVIDIA's site) made
on a connected machine; the originals are then removed, and a second "machine" with no network at
all (``unshare -rn``: a network namespace with only a down loopback) provisions CUDA from the
mirror and builds from it alone: the same wheel, with the same cache entry key, as the connected
build. (The stand-in site's CUDA holds nvcc and a few headers, enough to provision and check, not
to compile; the build compiles with the machine's CUDA 11.8 as the connected build does.)"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import require_tool
from tests.integration.execute.conftest import REPO_ROOT, Srcbuild, recipe, srcbuild_env
from tests.worlds.gitworld import World
from tests.worlds.nvidia_site import SiteServer, build_site

RECIPE = "world-kepler-cu118"
CREATE = ["mirror", "create", "--skip", "gcc"]  # the machine's gcc 11 builds (conda-forge is not reachable)
SOURCES_ONLY = [*CREATE, "--skip", "cuda", "--skip", "cudnn"]


def run(argv: list[str], env: dict[str, str], offline: bool = False) -> subprocess.CompletedProcess[str]:
    """srcbuild with stdout and stderr in one pipe, in the order written; Python's stdout buffered
    as in a user's shell (PYTHONUNBUFFERED, where the machine sets it, would hide a misordering)."""
    prefix = ["unshare", "-rn"] if offline else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "srcbuild", *argv],
        env={k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"},
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )


def entry_of(cache: Path) -> tuple[str, str]:
    """(entry key, fingerprint) of the one entry in a wheel cache: the entry's directory is its key."""
    (path,) = list(cache.rglob("manifest.json"))
    return path.parent.name, json.loads(path.read_text())["fingerprint"]


def test_a_mirror_builds_the_same_wheel_without_a_network(
    world: World, build_venv: Path, cuda118_home: Path, gcc11: Path, tmp_path: Path
) -> None:
    can_unshare = shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"]).returncode == 0
    require_tool("unshare -rn (user and network namespaces)", can_unshare)
    site = build_site(tmp_path / "site", cuda118_home, tmp_path / "data")
    connected = Srcbuild(srcbuild_env(cuda118_home), world, build_venv)
    built = connected.run("torch", RECIPE)
    assert built.rc == 0, built.out

    mirror = tmp_path / "mirror"
    env = srcbuild_env(None)
    env["SRCBUILD_TOOLCHAIN_DATA"] = str(site.data_dir)
    with SiteServer(site.root) as server:
        made = run(
            [*CREATE, str(mirror), "--recipe", recipe(RECIPE), "--mirror", world.mirror_rule, "--no-env"],
            {**env, "SRCBUILD_NVIDIA_MIRROR": server.url},
        )
    assert made.returncode == 0, made.stdout
    assert "created in" in made.stdout and "not mirrored: gcc 11: left out (--skip gcc)" in made.stdout
    assert (mirror / "git/github.com/pytorch/pytorch/info/refs").is_file()
    assert json.loads((mirror / "manifest.json").read_text())["providers"][0] == "redist"  # tried first offline
    again = run([*CREATE, str(mirror), "--recipe", recipe(RECIPE), "--mirror", world.mirror_rule, "--no-env"], env)
    assert again.returncode == 0 and "added 0 files" in again.stdout, again.stdout  # no network, nothing new

    copied = tmp_path / "copied"  # a plain copy works as well as the original
    shutil.copytree(mirror, copied)
    shutil.rmtree(site.root)
    hidden = world.root.with_name(world.root.name + ".gone")
    world.root.rename(hidden)
    try:
        offline = {**env, "SRCBUILD_WORK_DIR": str(tmp_path / "work"), "SRCBUILD_CACHE_DIR": str(tmp_path / "cache")}
        toolchains = {**offline, "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "toolchains")}
        installed = run(
            ["toolchain", "install", "--recipe", recipe(RECIPE), "--mirror-dir", str(copied)], toolchains, True
        )
        assert installed.returncode == 0, installed.stdout
        assert str(tmp_path / "toolchains" / "cuda-11.8-redist") in installed.stdout
        wheel = run(
            [
                "torch",
                "--recipe",
                recipe(RECIPE),
                "--mirror",
                world.mirror_rule,
                "--env",
                str(build_venv),
                "--mirror-dir",
                str(copied),
            ],
            {**offline, "CUDA_HOME": str(cuda118_home)},
            True,
        )
    finally:
        hidden.rename(world.root)
    assert wheel.returncode == 0, wheel.stdout
    assert Path(wheel.stdout.splitlines()[-1]).name == Path(built.last_line).name
    assert entry_of(tmp_path / "cache") == entry_of(connected.cache_dir)


def test_verify_catches_a_changed_byte_and_a_missing_piece_fails_at_once(world: World, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    env = srcbuild_env(None)
    made = run(
        [
            *SOURCES_ONLY,
            str(mirror),
            "--recipe",
            recipe(RECIPE),
            "--package",
            "torch",
            "--mirror",
            world.mirror_rule,
            "--no-env",
        ],
        env,
    )
    assert made.returncode == 0, made.stdout
    ok = run(["mirror", "verify", str(mirror)], env)
    assert ok.returncode == 0 and "all match the manifest" in ok.stdout, ok.stdout

    pack = next((mirror / "git/github.com/pytorch/pytorch/objects/pack").glob("*.pack"))
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0x01
    pack.write_bytes(bytes(data))
    bad = run(["mirror", "verify", str(mirror), "--json"], env)
    assert bad.returncode == 7, bad.stdout
    problems = json.loads(bad.stdout[: bad.stdout.rindex("}") + 1])["problems"]
    assert [p["path"] for p in problems] == [pack.relative_to(mirror).as_posix()]

    lacking = run(["torchvision", "--recipe", recipe(RECIPE), "--mirror-dir", str(mirror)], env)
    assert lacking.returncode == 4, lacking.stdout
    assert f"error: the mirror {mirror}/ holds nothing for torchvision of recipe {RECIPE}" in lacking.stdout
    assert f"hint: add it: srcbuild mirror create {mirror} --recipe" in lacking.stdout


def test_a_mirror_served_by_a_static_web_server_builds_the_wheel(
    world: World, build_venv: Path, cuda118_home: Path, gcc11: Path, tmp_path: Path
) -> None:
    """Python's own static file server (no git on the server side: git's "dumb" HTTP protocol)."""
    mirror = tmp_path / "mirror"
    env = srcbuild_env(None)
    made = run(
        [*SOURCES_ONLY, str(mirror), "--recipe", recipe(RECIPE), "--mirror", world.mirror_rule, "--no-env"], env
    )
    assert made.returncode == 0, made.stdout
    handler = functools.partial(QuietHandler, directory=str(mirror))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    hidden = world.root.with_name(world.root.name + ".gone")
    world.root.rename(hidden)
    try:
        built = run(
            ["torch", "--recipe", recipe(RECIPE), "--env", str(build_venv), "--mirror-dir", url],
            {**env, "CUDA_HOME": str(cuda118_home)},
        )
    finally:
        hidden.rename(world.root)
        server.shutdown()
        server.server_close()
    assert built.returncode == 0, built.stdout
    assert Path(built.stdout.splitlines()[-1]).name.startswith("torch-2.5.1+cu118")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass
