"""`srcbuild container build` with podman: the fixture world built in a devel image made from a
local Debian base, against the host build of the same recipe.

The wheels are compared member by member. nvcc names its temporary files after its process id
(``tmpxft_<pid>_...``) and keeps one name in the binary, so two builds of the same CUDA code
differ there even on one machine: the comparison blanks those names (and the RECORD, which holds
the hashes) and requires every other byte to be equal.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.integration.container.conftest import podman
from tests.integration.execute.conftest import recipe, srcbuild_env
from tests.worlds.gitworld import World

pytestmark = pytest.mark.integration
TMPXFT = re.compile(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}")


def members(wheel: Path) -> dict[str, str]:
    out = {}
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.filename.endswith(".dist-info/RECORD"):
                continue
            data = TMPXFT.sub(b"tmpxft_PID", zf.read(info))
            out[info.filename] = hashlib.sha256(data).hexdigest()
    return out


def run(argv: list[str], env: dict[str, str], timeout: int = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "srcbuild", *argv],
        env=env,
        cwd=REPO_ROOT,
        text=True,
        capture_output=True,
        timeout=timeout,
    )


def test_container_build_of_the_world_matches_the_host_build(
    world: World,
    build_venv: Path,
    cuda118_home: Path,
    gcc11: Path,
    podman_env: dict[str, str],
    base_image: str,
    tmp_path: Path,
) -> None:
    env = {**srcbuild_env(cuda118_home), "CONTAINERS_CONF": podman_env["CONTAINERS_CONF"]}
    name = recipe("world-kepler-cu118")
    host = run(["torch", "--recipe", name, "--mirror", world.mirror_rule, "--env", str(build_venv), "--json"], env)
    assert host.returncode == 0, host.stderr[-3000:]
    host_wheel = Path(json.loads(host.stdout)["wheel"])

    env["SRCBUILD_CACHE_DIR"] = str(tmp_path / "container-cache")  # same work dir, a cache of its own
    cuda = str(cuda118_home)
    argv = ["container", "build", "--recipe", name, "--engine", "podman", "--runtime", "runc"]
    argv += ["--base", base_image, "--mirror", world.mirror_rule, "--volume", str(world.root), "--volume", cuda]
    argv += ["--cuda-home", cuda, "--env", "/opt/buildenv", "--image-tag", "localhost/srcbuild-test-runtime:world"]
    built = run([*argv, "--json"], env)
    assert built.returncode == 0, built.stderr[-4000:]
    result = json.loads(built.stdout)
    wheel = Path(result["wheel"])
    assert result["engine"] == "podman" and result["cached"] is False
    assert wheel.is_file() and Path(env["SRCBUILD_CACHE_DIR"]) in wheel.parents
    # the image's Python is the host distribution's (the base is bootstrapped from the host's suite)
    assert wheel.name == host_wheel.name and wheel.name.startswith("torch-2.5.1+cu118.sm35.sm37-cp3")
    assert members(wheel) == members(host_wheel)

    # verified and fingerprinted like the host build, with the devel image's id recorded
    manifest = json.loads((wheel.parent / "manifest.json").read_text())
    host_manifest = json.loads((host_wheel.parent / "manifest.json").read_text())
    assert manifest["fingerprint"] == host_manifest["fingerprint"]
    assert manifest["kernels"] == host_manifest["kernels"] == {"sass": [35, 37], "ptx": [37]}
    assert manifest["resolved"]["extra"] == {"container_image": result["image_id"]}
    inspected = podman(podman_env, "image", "inspect", "--format", "{{.Id}}", result["devel_image"])
    assert inspected.stdout.strip() == result["image_id"]

    # the runtime image has the wheel and nothing of srcbuild
    ran = podman(
        podman_env,
        "run",
        "--rm",
        "--runtime",
        "runc",
        "localhost/srcbuild-test-runtime:world",
        "python",
        "-c",
        "import torch, importlib.util; print(torch.__version__, importlib.util.find_spec('srcbuild'))",
    )
    assert ran.stdout.strip().splitlines()[-1] == "2.5.1+cu118.sm35.sm37 None", ran.stdout
