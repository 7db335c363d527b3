"""``srcbuild doctor --containers``: can this machine build and run the wheels in containers?

Checks, each with the fix for Debian/Ubuntu when it fails:

* docker and podman: on PATH and answering ``info`` (a docker client without its daemon does not);
* a container starts (``run --rm --pull never IMAGE true`` with an image already here): in some
  sandboxes crun cannot set rlimits, and podman then needs ``--runtime runc`` and
  ``default_ulimits = []`` in ``containers.conf``;
* the NVIDIA container toolkit: ``nvidia-ctk``, the ``nvidia`` runtime in docker's
  ``/etc/docker/daemon.json``, CDI specs under ``/etc/cdi`` or ``/var/run/cdi`` (podman);
* with ``--gpu-check``: ``docker run --rm --gpus all IMAGE nvidia-smi`` (podman:
  ``--device nvidia.com/gpu=all``) with the image the recipe uses;
* shared memory: PyTorch's data loader workers pass tensors through ``/dev/shm``, which is 64 MB
  in a container by default; run with ``--ipc=host`` or ``--shm-size`` (pytorch/pytorch README.md,
  "Using pre-built images").

``gather`` probes, ``assess`` decides (pure), ``render`` writes the lines.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Optional

from srcbuild import proc
from srcbuild.container.engine import INSTALL, EngineProbe, probe_engine
from srcbuild.records import record

CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))
DOCKER_DAEMON = Path("/etc/docker/daemon.json")
RLIMIT = "error setting rlimit"
TOOLKIT_INSTALL = (
    "curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | sudo gpg --dearmor -o "
    "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg && curl -s -L "
    "https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | sed "
    "'s#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' | "
    "sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list && sudo apt-get update && "
    "sudo apt-get install -y nvidia-container-toolkit"
)
SHM = (
    "PyTorch's DataLoader workers share tensors through /dev/shm (64 MB in a container by default): "
    "start training containers with --ipc=host or --shm-size=8g"
)


@record
class Observed:
    """What the probes saw (no decisions)."""

    engines: tuple[EngineProbe, ...]
    nvidia_ctk: Optional[str] = None  # its version line
    docker_runtimes: tuple[str, ...] = ()  # "runtimes" of /etc/docker/daemon.json
    cdi_specs: tuple[str, ...] = ()
    start: Optional[tuple[str, str, bool, str]] = None  # engine, image, ok, last line
    gpu: Optional[tuple[str, str, bool, str]] = None  # engine, image, ok, last line


@record
class Check:
    name: str
    status: str  # ok | problem | info | skipped
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


@record
class ContainerReport:
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.status == "problem"]

    def to_json(self) -> dict[str, Any]:
        return {"checks": [c.to_json() for c in self.checks], "problems": len(self.problems)}


def _engine_check(probe: EngineProbe) -> Check:
    if probe.usable:
        return Check(probe.name, "ok", f"{probe.path}: {probe.detail}")
    if probe.path is None:
        return Check(probe.name, "info", "not installed", INSTALL[probe.name])
    fix = "sudo systemctl start docker" if probe.name == "docker" else "podman info"
    if "permission denied" in probe.detail.lower():
        fix = "sudo usermod -aG docker $USER && newgrp docker"
    return Check(probe.name, "problem", f"{probe.path} does not answer: {probe.detail}", fix)


def assess(seen: Observed) -> ContainerReport:
    checks = [_engine_check(p) for p in seen.engines]
    usable = [p for p in seen.engines if p.usable]
    if not usable:
        checks.append(Check("engine", "problem", "neither docker nor podman works here", INSTALL["podman"]))
    if seen.start is not None:
        engine, image, ok, line = seen.start
        if ok:
            checks.append(Check("container start", "ok", f"{engine} ran {image}"))
        elif RLIMIT in line:
            conf = "printf '[containers]\\ndefault_ulimits = []\\n' > ~/containers.conf"
            checks.append(
                Check(
                    "container start",
                    "problem",
                    f"{engine} cannot set rlimits for a container here ({line[:80]})",
                    f"sudo apt-get install -y runc && {conf} && export CONTAINERS_CONF=~/containers.conf && "
                    f"{engine} run --rm --runtime runc {image} true",
                )
            )
        else:
            checks.append(
                Check("container start", "problem", f"{engine} run {image}: {line}", f"{engine} run --rm {image} true")
            )
    if seen.nvidia_ctk:
        checks.append(Check("nvidia-ctk", "ok", seen.nvidia_ctk))
    else:
        checks.append(Check("nvidia-ctk", "problem", "the NVIDIA container toolkit is not installed", TOOLKIT_INSTALL))
    names = {p.name for p in usable}
    if "docker" in names:
        if "nvidia" in seen.docker_runtimes:
            checks.append(Check("docker runtime", "ok", f"nvidia runtime in {DOCKER_DAEMON}"))
        else:
            checks.append(
                Check(
                    "docker runtime",
                    "problem",
                    f"no nvidia runtime in {DOCKER_DAEMON}",
                    "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
                )
            )
    if "podman" in names:
        if seen.cdi_specs:
            checks.append(Check("CDI specs", "ok", ", ".join(seen.cdi_specs)))
        else:
            checks.append(
                Check(
                    "CDI specs",
                    "problem",
                    f"no CDI spec in {' or '.join(str(d) for d in CDI_DIRS)}: podman cannot see the GPU",
                    "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
                )
            )
    if seen.gpu is None:
        checks.append(Check("GPU in a container", "skipped", "run with --gpu-check (starts a container)"))
    else:
        engine, image, ok, line = seen.gpu
        if ok:
            checks.append(Check("GPU in a container", "ok", f"{engine} {image} nvidia-smi: {line}"))
        else:
            checks.append(
                Check(
                    "GPU in a container",
                    "problem",
                    f"{engine} {image} nvidia-smi: {line}",
                    gpu_argv_text(engine, image),
                )
            )
    checks.append(Check("shared memory", "info", SHM))
    return ContainerReport(tuple(checks))


def gpu_argv(engine: str, program: str, image: str, runtime: Optional[str]) -> tuple[str, ...]:
    gpus = ("--gpus", "all") if engine == "docker" else ("--device", "nvidia.com/gpu=all")
    rt = ("--runtime", runtime) if runtime else ()
    return (program, "run", "--rm", *rt, *gpus, image, "nvidia-smi")


def gpu_argv_text(engine: str, image: str) -> str:
    return proc.format_argv(gpu_argv(engine, engine, image, None))


def _last(text: Optional[str]) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _attempt(argv: Sequence[str]) -> tuple[bool, str]:
    """Run a container; whether it worked and its last line."""
    try:
        result = proc.run(argv)
    except FileNotFoundError:
        return False, f"{argv[0]} is not installed"
    return result.ok, _last("\n".join(result.tail))


def gather(gpu_image: Optional[str], runtime: Optional[str] = None) -> Observed:
    engines = tuple(probe_engine(name) for name in ("docker", "podman"))
    ctk = proc.probe(["nvidia-ctk", "--version"]) if shutil.which("nvidia-ctk") else None
    runtimes: tuple[str, ...] = ()
    if DOCKER_DAEMON.is_file():
        try:
            runtimes = tuple(json.loads(DOCKER_DAEMON.read_text()).get("runtimes", {}))
        except (OSError, ValueError):
            runtimes = ()
    specs = tuple(str(p) for d in CDI_DIRS if d.is_dir() for p in sorted(d.iterdir()) if p.suffix in (".yaml", ".json"))
    usable = [p for p in engines if p.usable]
    start = gpu = None
    if usable:
        engine = usable[0]
        assert engine.path is not None
        images = proc.probe([engine.path, "images", "--format", "{{.Repository}}:{{.Tag}}"]) or ""
        local = next((i for i in images.split() if not i.endswith(":<none>")), None)
        rt = ("--runtime", runtime) if runtime else ()
        if local:
            ok, line = _attempt([engine.path, "run", "--rm", *rt, "--pull", "never", local, "true"])
            start = (engine.name, local, ok, line)
        if gpu_image:
            ok, line = _attempt(gpu_argv(engine.name, engine.path, gpu_image, runtime))
            gpu = (engine.name, gpu_image, ok, line)
    return Observed(engines, _last(ctk) if ctk else None, runtimes, specs, start, gpu)


def render(report: ContainerReport) -> str:
    marks = {"ok": "ok", "problem": "PROBLEM", "info": "note", "skipped": "skipped"}
    out = ["Containers:"]
    for check in report.checks:
        out.append(f"  {check.name}: {marks[check.status]}: {check.detail}")
        if check.fix and check.status == "problem":
            out.append(f"    fix: {check.fix}")
    out.append(f"{len(report.problems)} problem(s)" if report.problems else "no problems found")
    return "\n".join(out) + "\n"
