"""The container engine: docker or podman, found and checked once, and the OCI runtime it uses.

``pick_engine`` is the pure choice (docker first, then podman, each only when its daemon or
storage answers ``info``); ``find_engine`` probes the two programs and asks it. A docker client
without a daemon (``Cannot connect to the Docker daemon``) does not count as docker.

Sandboxes: where crun cannot set resource limits (``error setting rlimit type 7: operation not
permitted``), podman works with ``--runtime runc`` and a ``containers.conf`` (``CONTAINERS_CONF``)
whose ``[containers]`` table has ``default_ulimits = []``; ``srcbuild doctor --containers`` says so.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from typing import Optional

from srcbuild import proc
from srcbuild.errors import HostError, UsageError
from srcbuild.records import record

ENGINES = ("docker", "podman")
INSTALL = {
    "docker": "sudo apt-get install -y docker.io && sudo usermod -aG docker $USER",
    "podman": "sudo apt-get install -y podman",
}


@record
class EngineProbe:
    """What ``<engine> info`` said: found on PATH, usable, and the first line of its answer."""

    name: str
    path: Optional[str]
    usable: bool
    detail: str


@record
class Engine:
    name: str
    program: str
    runtime: Optional[str] = None  # --runtime for podman/docker run (runc, nvidia)

    def runtime_args(self) -> tuple[str, ...]:
        return ("--runtime", self.runtime) if self.runtime else ()

    def build_runtime_args(self) -> tuple[str, ...]:
        """``podman build`` takes ``--runtime``; ``docker build`` does not."""
        return self.runtime_args() if self.name == "podman" else ()


def probe_engine(name: str, environ: Optional[Mapping[str, str]] = None) -> EngineProbe:
    path = shutil.which(name, path=(environ or {}).get("PATH")) if environ else shutil.which(name)
    if path is None:
        return EngineProbe(name, None, False, f"{name} is not on PATH")
    out = proc.probe([path, "info", "--format", "{{json .}}"], env=environ, timeout=30.0)
    if out is None:
        err = proc.probe([path, "info"], env=environ, timeout=30.0, ok_codes=tuple(range(256))) or ""
        lines = [line.strip() for line in err.splitlines() if line.strip()]
        why = next((line for line in lines if "rror" in line or "annot" in line), lines[-1] if lines else "no answer")
        return EngineProbe(name, path, False, why)
    return EngineProbe(name, path, True, f"{name} info answered")


def pick_engine(probes: Sequence[EngineProbe], wanted: Optional[str] = None) -> EngineProbe:
    """The engine to use: ``wanted`` if it works, else docker, then podman."""
    if wanted is not None and wanted not in ENGINES:
        raise UsageError(f"--engine {wanted}: not one of {', '.join(ENGINES)}", "give --engine podman")
    by_name = {p.name: p for p in probes}
    order = (wanted,) if wanted else ENGINES
    for name in order:
        probe = by_name.get(name)
        if probe is not None and probe.usable:
            return probe
    tried = "; ".join(f"{by_name[n].name}: {by_name[n].detail}" for n in order if n in by_name)
    first = order[0]
    raise HostError(
        f"no usable container engine ({tried or 'none probed'})",
        INSTALL[first] if by_name.get(first) is None or by_name[first].path is None else f"{first} info",
    )


def find_engine(wanted: Optional[str] = None, runtime: Optional[str] = None) -> Engine:
    names = (wanted,) if wanted in ENGINES else ENGINES
    chosen = pick_engine([probe_engine(name) for name in names], wanted)
    assert chosen.path is not None
    return Engine(chosen.name, chosen.path, runtime)
