"""Machine resources and environment tools: cores, memory, free disk, conda/mamba/micromamba, docker.

Memory comes from ``/proc/meminfo`` (MemTotal, MemAvailable) under the injected root; the free
disk is that of the work directory (or its nearest existing parent). Docker's runtimes come from
``docker info`` under a short timeout, since a client without a daemon can hang; it is not run where
no daemon can answer it (``docker_unreachable``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from srcbuild.host.facts import DockerInfo, Resources
from srcbuild.host.locate import Runner, Which, is_executable, read_text, under
from srcbuild.host.parsers import parse_docker_runtimes, parse_meminfo

CONDA_TOOLS = ("micromamba", "mamba", "conda")
CONDA_ENV_VARS = {"CONDA_EXE": "conda", "MAMBA_EXE": "micromamba"}
CONDA_DIRS = ("/opt/conda/bin", "/opt/miniconda3/bin", "/opt/miniforge3/bin")
DOCKER_TIMEOUT_S = 3.0
DOCKER_SOCKET = "/var/run/docker.sock"


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def free_disk(path: Path) -> int | None:
    """Free bytes on the file system that holds ``path`` (it need not exist yet)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def probe_resources(work_dir: Path, root: Path = Path("/"), cores: int | None = None) -> Resources:
    text = read_text(under(root, "/proc/meminfo")) or ""
    total, available = parse_meminfo(text)
    return Resources(cores or cpu_cores(), total, available, work_dir, free_disk(work_dir))


def find_conda(environ: Mapping[str, str], root: Path, which: Which) -> list[tuple[str, Path]]:
    """conda, mamba and micromamba executables: ``CONDA_EXE``/``MAMBA_EXE``, PATH, the usual prefixes."""
    found: list[tuple[str, Path]] = []
    candidates: list[tuple[str, Path]] = []
    for var, name in CONDA_ENV_VARS.items():
        if environ.get(var):
            path = Path(environ[var])
            candidates.append((path.name if path.name in CONDA_TOOLS else name, path))
    for name in CONDA_TOOLS:
        hit = which(name)
        if hit is not None:
            candidates.append((name, hit))
    home = environ.get("HOME")
    dirs = [under(root, d) for d in CONDA_DIRS]
    if home:
        dirs.extend(Path(home) / d / "bin" for d in ("miniconda3", "miniforge3", "mambaforge", "anaconda3"))
        dirs.append(Path(home) / ".local" / "bin")
    for directory in dirs:
        candidates.extend((name, directory / name) for name in CONDA_TOOLS)
    for name, path in candidates:
        if is_executable(path) and not any(p.resolve() == path.resolve() for _, p in found):
            found.append((name, path))
    return found


def docker_unreachable(environ: Mapping[str, str], root: Path = Path("/")) -> str:
    """Why docker's client cannot reach a daemon, where that is known without running it; else "".

    The client picks its daemon from ``DOCKER_HOST``, then ``DOCKER_CONTEXT``, then the
    ``currentContext`` of its ``config.json`` (in ``DOCKER_CONFIG``, else ``~/.docker``), else the
    socket ``/var/run/docker.sock`` (docker's context documentation). Only when none of the first
    three is set and the socket does not exist can ``docker info`` do nothing but fail (13 ms of CPU
    for the Go client here). A config that cannot be read, or a missing ``HOME``, asks docker.
    """
    if environ.get("DOCKER_HOST") or environ.get("DOCKER_CONTEXT"):
        return ""
    if environ.get("DOCKER_CONFIG"):
        config = Path(environ["DOCKER_CONFIG"]) / "config.json"
    elif environ.get("HOME"):
        config = Path(environ["HOME"]) / ".docker" / "config.json"
    else:
        return ""
    try:
        if b"currentContext" in config.read_bytes():
            return ""  # a context names the daemon (rootless, remote): docker reads it
    except FileNotFoundError:
        pass
    except OSError:
        return ""
    if os.path.lexists(under(root, DOCKER_SOCKET)):
        return ""
    return f"no daemon: no {DOCKER_SOCKET}, and no DOCKER_HOST or docker context names another"


def probe_docker(which: Which, run: Runner, environ: Mapping[str, str], root: Path) -> DockerInfo | None:
    """The docker client and its daemon's runtimes (``None`` runtimes: daemon not reachable)."""
    docker = which("docker")
    if docker is None:
        return None
    unreachable = docker_unreachable(environ, root)
    if unreachable:
        return DockerInfo(docker, None, unreachable)
    out = run([str(docker), "info", "--format", "{{json .Runtimes}}"], timeout=DOCKER_TIMEOUT_S)
    return DockerInfo(docker, parse_docker_runtimes(out) if out else None)


def conda_env_dirs(conda: Sequence[tuple[str, Path]], envs_dir: Path | None) -> list[tuple[Path, str]]:
    """Environments of the conda installations found (``<base>/envs/*``) and srcbuild's own, as CUDA homes."""
    out: list[tuple[Path, str]] = []
    bases = []
    for _, exe in conda:
        base = exe.resolve().parent.parent
        if base not in bases:
            bases.append(base)
    for base in bases:
        out.append((base, "conda base"))
        envs = base / "envs"
        if envs.is_dir():
            out.extend((env, f"conda env {env.name}") for env in sorted(envs.iterdir()) if env.is_dir())
    if envs_dir is not None and envs_dir.is_dir():
        out.extend((env, f"srcbuild env {env.name}") for env in sorted(envs_dir.iterdir()) if env.is_dir())
    return out
