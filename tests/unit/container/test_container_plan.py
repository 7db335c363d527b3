"""`srcbuild container build` decided as data: which engine, which commands, where the wheel lands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from srcbuild.container import dockerfile_spec
from srcbuild.container.build import (
    ContainerLayout,
    ContainerRequest,
    devel_tag,
    host_wheel,
    plan_container_run,
    plan_devel_build,
    runtime_dockerfile,
    volume_args,
)
from srcbuild.container.engine import Engine, EngineProbe, pick_engine
from srcbuild.errors import HostError, UsageError
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog

NO_DAEMON = EngineProbe("docker", "/usr/bin/docker", False, "Cannot connect to the Docker daemon")
PODMAN = EngineProbe("podman", "/usr/bin/podman", True, "podman info answered")
DOCKER = EngineProbe("docker", "/usr/bin/docker", True, "docker info answered")


def recipe(name: str) -> Recipe:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load(name)


def test_docker_first_then_podman() -> None:
    assert pick_engine([DOCKER, PODMAN]).name == "docker"
    assert pick_engine([NO_DAEMON, PODMAN]).name == "podman"  # a client without a daemon is no docker
    assert pick_engine([DOCKER, PODMAN], "podman").name == "podman"


def test_no_engine_says_how_to_install_one() -> None:
    missing = EngineProbe("podman", None, False, "podman is not on PATH")
    with pytest.raises(HostError) as err:
        pick_engine([missing], "podman")
    assert err.value.message == "no usable container engine (podman: podman is not on PATH)"
    assert err.value.hint == "sudo apt-get install -y podman"
    with pytest.raises(HostError) as err:
        pick_engine([NO_DAEMON, missing])
    assert err.value.hint == "docker info"  # the client is there: its daemon is what to look at
    with pytest.raises(UsageError):
        pick_engine([PODMAN], "lxc")


def test_commands_mount_the_host_work_dir_and_cache_at_the_same_paths(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path / "work", tmp_path / "cache", environ=os.environ)
    engine = Engine("podman", "/usr/bin/podman", "runc")
    request = ContainerRequest(
        recipe("kepler-k80-cu118"),
        mirrors=("gitee",),
        volumes=("/srv/mirrors",),
        build_args=("--max-jobs", "2"),
    )
    layout = ContainerLayout.for_recipe(paths, request.recipe)
    build = plan_devel_build(engine, request, layout)
    tag = "localhost/srcbuild-devel-kepler-k80-cu118:v2.5.1"
    assert devel_tag(request.recipe) == tag
    assert build.argv == (
        "/usr/bin/podman",
        "build",
        "--runtime",
        "runc",
        "--target",
        "devel",
        "-t",
        tag,
        "-f",
        str(layout.context / "Dockerfile"),
        str(layout.context),
    )
    run = plan_container_run(engine, request, paths, "sha256:abc")
    work, cache = str(paths.work_dir), str(paths.cache_dir)
    assert run.argv == (
        "/usr/bin/podman",
        "run",
        "--rm",
        "--runtime",
        "runc",
        "-v",
        f"{work}:{work}",
        "-v",
        f"{cache}:{cache}",
        "-v",
        "/srv/mirrors:/srv/mirrors",
        "-e",
        f"SRCBUILD_WORK_DIR={work}",
        "-e",
        f"SRCBUILD_CACHE_DIR={cache}",
        "-e",
        "SRCBUILD_BUILD_IMAGE=sha256:abc",
        "-e",
        "SRCBUILD_MIRROR=gitee",
        tag,
        "srcbuild",
        "torch",
        "--recipe",
        "kepler-k80-cu118",
        "--max-jobs",
        "2",
        "--json",
    )


def test_docker_build_takes_no_runtime() -> None:
    engine = Engine("docker", "/usr/bin/docker", "nvidia")
    assert engine.build_runtime_args() == ()
    assert engine.runtime_args() == ("--runtime", "nvidia")


def test_volumes_are_absolute() -> None:
    assert volume_args(["/a", "/b:/c"]) == ("-v", "/a:/a", "-v", "/b:/c")
    with pytest.raises(UsageError, match="give absolute paths"):
        volume_args(["rel/dir"])


def test_the_wheel_is_read_from_the_json_result() -> None:
    result = {"wheel": "/c/entries/ab/cd/torch-2.5.1-cp311-cp311-linux_x86_64.whl", "cached": False, "steps": []}
    lines = ["+ git fetch", "{", '  "nested": 1', "}", *json.dumps(result, indent=2).splitlines()]
    assert host_wheel(lines) == (Path(result["wheel"]), False)


def test_runtime_image_takes_the_wheels_from_its_context() -> None:
    spec = dockerfile_spec(recipe("pascal-cu126"), "torchvision")
    text = runtime_dockerfile(spec, ["torch-2.11.0.whl", "torchvision-0.26.0.whl"])
    assert "ARG RUNTIME_IMAGE=docker.io/nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04" in text
    assert "COPY torch-2.11.0.whl /tmp/wheels/torch-2.11.0.whl\nCOPY torchvision-0.26.0.whl" in text
    assert "--from=build" not in text and "srcbuild toolchain" not in text


def test_a_mirror_dir_is_mounted_read_only_and_named_to_the_build_inside(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path / "work", tmp_path / "cache", environ=os.environ)
    engine = Engine("docker", "/usr/bin/docker", None)
    local = ContainerRequest(recipe("kepler-k80-cu118"), mirror_dir="/srv/srcbuild-mirror/")
    argv = plan_container_run(engine, local, paths, "sha256:abc").argv
    mount = argv.index("/srv/srcbuild-mirror:/srv/srcbuild-mirror:ro")
    assert argv[mount - 1] == "-v" and "SRCBUILD_MIRROR_DIR=/srv/srcbuild-mirror/" in argv
    served = ContainerRequest(recipe("kepler-k80-cu118"), mirror_dir="http://mirror.lab/srcbuild/")
    argv = plan_container_run(engine, served, paths, "sha256:abc").argv
    assert "SRCBUILD_MIRROR_DIR=http://mirror.lab/srcbuild/" in argv and not any(a.endswith(":ro") for a in argv)
