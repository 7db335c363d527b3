"""`srcbuild doctor --containers` decides from what it saw: each problem with its Debian/Ubuntu fix."""

from __future__ import annotations

from srcbuild.container.doctor import TOOLKIT_INSTALL, Observed, assess, render
from srcbuild.container.engine import EngineProbe

NO_DAEMON = EngineProbe(
    "docker", "/usr/bin/docker", False, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
)
PODMAN = EngineProbe("podman", "/usr/bin/podman", True, "podman info answered")
DOCKER = EngineProbe("docker", "/usr/bin/docker", True, "docker info answered")
RLIMIT = "Error: runc: runc create failed: error setting rlimits for ready process: error setting rlimit type 7"


def by_name(seen: Observed) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.fix) for c in assess(seen).checks}


def test_podman_in_a_sandbox_without_the_toolkit() -> None:
    seen = Observed((NO_DAEMON, PODMAN), start=("podman", "localhost/base:12", False, RLIMIT))
    checks = by_name(seen)
    assert checks["docker"] == ("problem", "sudo systemctl start docker")
    assert checks["podman"][0] == "ok"
    assert checks["container start"] == (
        "problem",
        "sudo apt-get install -y runc && printf '[containers]\\ndefault_ulimits = []\\n' > ~/containers.conf && "
        "export CONTAINERS_CONF=~/containers.conf && podman run --rm --runtime runc localhost/base:12 true",
    )
    assert checks["nvidia-ctk"] == ("problem", TOOLKIT_INSTALL)
    assert checks["CDI specs"] == ("problem", "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")
    assert "docker runtime" not in checks  # docker does not run here: its runtime is not the question
    assert checks["GPU in a container"][0] == "skipped"
    assert checks["shared memory"][0] == "info"


def test_docker_with_the_toolkit_and_a_gpu() -> None:
    gpu = ("docker", "docker.io/nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", True, "| 0 Tesla K80 |")
    seen = Observed(
        (DOCKER,), nvidia_ctk="NVIDIA Container Toolkit CLI version 1.17.8", docker_runtimes=("nvidia",), gpu=gpu
    )
    report = assess(seen)
    assert report.problems == []
    text = render(report)
    assert "  docker runtime: ok: nvidia runtime in /etc/docker/daemon.json\n" in text
    assert text.endswith("no problems found\n")


def test_docker_without_the_nvidia_runtime_and_a_failing_gpu_check() -> None:
    gpu = ("docker", "img:1", False, 'could not select device driver "" with capabilities: [[gpu]]')
    checks = by_name(Observed((DOCKER,), nvidia_ctk="1.17", gpu=gpu))
    assert checks["docker runtime"] == (
        "problem",
        "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
    )
    assert checks["GPU in a container"] == ("problem", "docker run --rm --gpus all img:1 nvidia-smi")


def test_no_engine_at_all() -> None:
    missing = (EngineProbe("docker", None, False, "not on PATH"), EngineProbe("podman", None, False, "not on PATH"))
    checks = by_name(Observed(missing))
    assert checks["docker"] == ("info", "sudo apt-get install -y docker.io && sudo usermod -aG docker $USER")
    assert checks["engine"] == ("problem", "sudo apt-get install -y podman")
