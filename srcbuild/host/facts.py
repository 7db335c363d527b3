"""What srcbuild knows about a machine, as frozen data: each fact says where it was found.

``HostFacts`` is what ``probe_host`` returns and what ``doctor``, ``recommend`` and the host
preflight read. Nothing here runs a program; the probes in the sibling modules fill it in.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any

from srcbuild.capability import ComputeCapability
from srcbuild.records import record


def version_matches(pinned: str, found: str) -> bool:
    """True when a tool's ``found`` version is the ``pinned`` one ("9.2" accepts "9.2.148").

    A pin of major.minor compares those; a three-part pin must match the third part too (its
    prefix: "11.4.1" accepts nvcc's "11.4.100"). Used for CUDA, cuDNN and MPI versions.
    """
    want = pinned.split(".")
    have = found.split(".")
    return have[: len(want)] == want if len(want) <= 2 else have[:2] == want[:2] and have[2].startswith(want[2])



@record
class ProvisionedDirs:
    """More places the probe looks: the complete prefixes srcbuild provisioned (``toolchain.homes``)."""

    cuda_homes: list[tuple[Path, str]] = field(default_factory=list)  # (home, "srcbuild toolchain <key>")
    gcc_bins: list[Path] = field(default_factory=list)
    cudnn: list[Path] = field(default_factory=list)
    nccl: list[Path] = field(default_factory=list)
    mpi_bins: list[Path] = field(default_factory=list)


@record
class GpuInfo:
    """One NVIDIA GPU: its name, compute capability (None when unknown) and PCI device id."""

    name: str
    cc: ComputeCapability | None
    source: str  # "nvidia-smi", "lspci"
    pci_id: str | None = None  # "10de:0fe4"
    chip: str | None = None  # "GK107", from the knowledge base
    candidates: tuple[str, ...] = ()  # other readings of an ambiguous name, e.g. "GK104 (3.0)"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "compute_capability": str(self.cc) if self.cc else None,
            "pci_id": self.pci_id,
            "chip": self.chip,
            "source": self.source,
            "candidates": list(self.candidates),
        }


@record
class DriverInfo:
    """The NVIDIA kernel driver version, e.g. "470.82.01"."""

    version: str
    source: str  # "nvidia-smi", "/proc/driver/nvidia/version", "--driver"

    @property
    def branch(self) -> int:
        """The driver branch: 470 for 470.82.01."""
        return int(self.version.split(".")[0])


@record
class CudaToolkit:
    """A CUDA toolkit whose nvcc reported ``version`` ("11.8.89") when run."""

    version: str
    home: Path
    nvcc: Path
    source: str  # "CUDA_HOME", "/usr/local/cuda-*", "PATH", "conda env"
    missing: tuple[str, ...] = ()  # components of the complete-home contract it lacks ("cusparse")

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def release(self) -> str:
        """Major.minor: "11.8"."""
        return ".".join(self.version.split(".")[:2])


@record
class HeaderVersion:
    """A library version read from its header (cuDNN, NCCL)."""

    version: str
    header: Path


@record
class GccInstall:
    """A gcc whose ``-dumpfullversion`` said ``version``; ``gxx`` is the matching g++ if present."""

    major: int
    version: str
    path: Path
    gxx: Path | None = None


@record
class MpiInstall:
    """An MPI implementation ("openmpi", "mpich", "intel-mpi") with its compiler wrappers."""

    implementation: str
    version: str
    mpicc: Path | None
    mpicxx: Path | None
    source: str  # the command whose output named the version


@record
class DockerInfo:
    """The docker client, and the runtimes its daemon reported (None: daemon not reachable)."""

    path: Path
    runtimes: tuple[str, ...] | None
    unreachable: str = ""  # why no daemon can answer, known without asking (then docker is not run)

    @property
    def nvidia_runtime(self) -> bool:
        return bool(self.runtimes) and "nvidia" in (self.runtimes or ())


@record
class Resources:
    """Cores, memory and the free disk of the work directory."""

    cores: int
    memory_bytes: int | None
    memory_available_bytes: int | None
    work_dir: Path
    disk_free_bytes: int | None


@record
class HostFacts:
    """Everything ``probe_host`` found, plus a line for each tool it looked for and did not find."""

    gpus: tuple[GpuInfo, ...] = ()
    driver: DriverInfo | None = None
    cuda_toolkits: tuple[CudaToolkit, ...] = ()
    cudnn: tuple[HeaderVersion, ...] = ()
    nccl: tuple[HeaderVersion, ...] = ()
    gccs: tuple[GccInstall, ...] = ()
    mpi: tuple[MpiInstall, ...] = ()
    conda: tuple[tuple[str, Path], ...] = ()  # ("micromamba", path)
    docker: DockerInfo | None = None
    resources: Resources | None = None
    missing: tuple[str, ...] = field(default=())
    cuda_contract: str = "error"  # SRCBUILD_CUDA_CONTRACT: "warn" lets an incomplete CUDA home build

    def gcc(self, major: int) -> GccInstall | None:
        return next((g for g in self.gccs if g.major == major), None)

    def cuda_toolkit(self, pinned: str) -> CudaToolkit | None:
        """The toolkit whose nvcc reports ``pinned`` ("9.2" accepts 9.2.148): the one ``CUDA_HOME``
        (``CUDA_PATH``, ``CUDA_ROOT``) names, else the first complete one, else the first (which the
        preflight refuses, naming what it lacks)."""
        matching = [t for t in self.cuda_toolkits if version_matches(pinned, t.version)]
        named = [t for t in matching if t.source in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
        return next(iter(named), next((t for t in matching if t.complete), matching[0] if matching else None))

    def cudnn_version(self, pinned: str) -> HeaderVersion | None:
        """The first cuDNN whose header reports ``pinned`` ("8.5" accepts 8.5.0)."""
        return next((c for c in self.cudnn if version_matches(pinned, c.version)), None)

    def to_json(self) -> dict[str, Any]:
        res = self.resources
        return {
            "gpus": [g.to_json() for g in self.gpus],
            "driver": {"version": self.driver.version, "source": self.driver.source} if self.driver else None,
            "cuda_toolkits": [
                {"version": t.version, "home": str(t.home), "nvcc": str(t.nvcc), "source": t.source}
                for t in self.cuda_toolkits
            ],
            "cudnn": [{"version": c.version, "header": str(c.header)} for c in self.cudnn],
            "nccl": [{"version": c.version, "header": str(c.header)} for c in self.nccl],
            "gccs": [
                {"major": g.major, "version": g.version, "path": str(g.path), "gxx": str(g.gxx) if g.gxx else None}
                for g in self.gccs
            ],
            "mpi": [
                {
                    "implementation": m.implementation,
                    "version": m.version,
                    "mpicc": str(m.mpicc) if m.mpicc else None,
                    "mpicxx": str(m.mpicxx) if m.mpicxx else None,
                    "source": m.source,
                }
                for m in self.mpi
            ],
            "conda": [{"name": name, "path": str(path)} for name, path in self.conda],
            "docker": (
                {
                    "path": str(self.docker.path),
                    "runtimes": list(self.docker.runtimes) if self.docker.runtimes is not None else None,
                    "nvidia_runtime": self.docker.nvidia_runtime,
                }
                if self.docker
                else None
            ),
            "resources": (
                {
                    "cores": res.cores,
                    "memory_bytes": res.memory_bytes,
                    "memory_available_bytes": res.memory_available_bytes,
                    "work_dir": str(res.work_dir),
                    "disk_free_bytes": res.disk_free_bytes,
                }
                if res
                else None
            ),
            "missing": list(self.missing),
        }
