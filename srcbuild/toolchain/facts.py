"""The sourced data providers work from: download URLs, sha256, components, routes per version.

Built-in files live in ``toolchain/data/`` (each row names its source), one per provider: each
provider reads its own file (``Provider.read_data``; ``toolchain.data_files`` asks them all).
``SRCBUILD_TOOLCHAIN_DATA`` names more directories (``os.pathsep``-separated) holding files of the
same names; their rows come first, so a site can add a version, or a test its own checksums,
without editing srcbuild.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from srcbuild.records import record

DATA_DIR = Path(__file__).resolve().parent / "data"
DATA_VAR = "SRCBUILD_TOOLCHAIN_DATA"


def release_of(version: str) -> str:
    """ "11.8.89" -> "11.8"."""
    return ".".join(version.split(".")[:2])


def matches(pin: str, version: str) -> bool:
    """A pin ("9.2", "7.6", "11.8.0") matches a full version when it is a prefix of its parts."""
    want = pin.split(".")
    return version.split(".")[: len(want)] == want


@record
class Runfile:
    version: str
    url: str
    sha256: str
    path_flag: str
    size: int | None
    source: str


@record
class RedistComponent:
    name: str
    version: str
    path: str
    sha256: str
    size: int


@record
class Redist:
    version: str
    base: str
    manifest: str
    components: tuple[RedistComponent, ...]
    source: str

    @property
    def size(self) -> int:
        return sum(c.size for c in self.components)

    def url(self, component: RedistComponent) -> str:
        return self.base.rstrip("/") + "/" + component.path


@record
class CudnnArchive:
    version: str
    cuda: str  # "9.2", or "11" for a build that serves every 11.x
    url: str
    sha256: str
    layout: str  # "legacy" (cuda/include, cuda/lib64) or "redist" (<dir>/include, <dir>/lib)
    size: int | None
    source: str

    def serves(self, cuda: str) -> bool:
        return matches(self.cuda, cuda)


@record
class Wheel:
    """A wheel of the package index pinned by requirement (``name==version``), sha256 and size."""

    requirement: str
    sha256: str
    size: int | None = None

    @property
    def project(self) -> str:
        return self.requirement.split("==", 1)[0].strip()

    @property
    def version(self) -> str:
        return self.requirement.split("==", 1)[1].strip() if "==" in self.requirement else ""


@record
class IndexWheel:
    """A cuDNN or NCCL wheel of the package index (``pypi.toml``): pinned, with the kernels read from it."""

    tool: str  # "cudnn" | "nccl"
    version: str  # "8.5.0.96"
    cuda: str  # the CUDA major it is built for: "11"
    requirement: str  # "nvidia-cudnn-cu11==8.5.0.96"
    filename: str
    sha256: str
    size: int | None
    package: str  # where in the wheel: "nvidia/cudnn"
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    source: str

    def serves(self, cuda: str) -> bool:
        return cuda.split(".")[0] == self.cuda

    @property
    def key_version(self) -> str:
        """The store key's version: ``8.5.0.96-cuda11``."""
        return f"{self.version}-cuda{self.cuda}"


@record
class DebianRoute:
    cuda: str
    expect: str
    suite: str
    components: tuple[str, ...]
    keyring: str
    packages: tuple[str, ...]
    wheels: tuple[Wheel, ...]
    download_size: int | None
    source: str
    # Files taken out of one more package without unpacking the rest of it (the static runtime
    # and the driver stub torch's CMake links, which Debian ships only in nvidia-cuda-dev):
    # paths inside the package, each copied to the home's lib/ under its path below the
    # package's library directory (``stubs/libcuda.so``).
    extract_package: str = ""
    extract_files: tuple[str, ...] = ()

    @property
    def all_packages(self) -> tuple[str, ...]:
        """Every package the route downloads: those unpacked whole, then the one files come from."""
        return (*self.packages, self.extract_package) if self.extract_package else self.packages


@record
class CondaTool:
    channel: str
    packages: tuple[str, ...]
    source: str
    triplet: str = ""
    majors: tuple[str, ...] = ()  # gcc: the majors the channel has
    versions: tuple[str, ...] = ()  # CUDA: the releases ("11.8", "12.6") the channel has
    archs: tuple[str, ...] = ()  # MAGMA: the compute capabilities its kernels are built for (SASS only)

    def runs_on(self, arch: str) -> bool:
        """A GPU of compute capability ``arch`` runs a kernel built for one of ``archs`` (same major,
        minor not above); always true when the data names no archs."""
        if not self.archs:
            return True
        major, _, minor = arch.partition(".")
        return any(
            a.partition(".")[0] == major and int(a.partition(".")[2] or 0) <= int(minor or 0) for a in self.archs
        )

    def specs(self, **values: str) -> tuple[str, ...]:
        return tuple(p.format(**values) for p in self.packages)


@record
class CondaSysroot:
    """conda-forge's ``sysroot_linux-64`` of one glibc, installed beside a conda gcc (portable builds)."""

    channel: str
    packages: tuple[str, ...]
    glibc: str  # "2.17"
    path: str  # where in the prefix: "x86_64-conda-linux-gnu/sysroot"
    source: str

    def specs(self) -> tuple[str, ...]:
        return tuple(p.format(glibc=self.glibc) for p in self.packages)


@record
class NcclSource:
    tag: str
    repo: str
    lowest_cc: str
    source: str


@record
class ToolchainFacts:
    runfiles: tuple[Runfile, ...] = ()
    redists: tuple[Redist, ...] = ()
    cudnn: tuple[CudnnArchive, ...] = ()
    debian: tuple[DebianRoute, ...] = ()
    gcc: CondaTool | None = None
    mpi: Mapping[str, CondaTool] = field(default_factory=dict)
    cuda_conda: CondaTool | None = None
    magma: CondaTool | None = None
    nccl: tuple[NcclSource, ...] = ()
    sysroot: CondaSysroot | None = None
    index_wheels: tuple[IndexWheel, ...] = ()
    # rows of a provider that keeps its own types (provider name -> rows): a new provider needs no field here
    rows: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def index_wheel_for(self, tool: str, version: str, cuda: str) -> IndexWheel | None:
        """The first ``pypi.toml`` row of ``tool`` matching the pin ``version`` built for ``cuda``'s major."""
        return next(
            (w for w in self.index_wheels if w.tool == tool and matches(version, w.version) and w.serves(cuda)), None
        )

    def runfile_for(self, version: str) -> Runfile | None:
        return next((r for r in self.runfiles if matches(version, r.version)), None)

    def redist_for(self, version: str) -> Redist | None:
        return next((r for r in self.redists if matches(version, r.version)), None)

    def debian_for(self, version: str) -> DebianRoute | None:
        return next((d for d in self.debian if matches(version, d.expect)), None)

    def cudnn_for(self, version: str, cuda: str) -> CudnnArchive | None:
        return next((a for a in self.cudnn if matches(version, a.version) and a.serves(cuda)), None)


def data_size(value: object) -> int | None:
    """A size in bytes as a data file gives it (a number, or digits), else None."""
    return int(value) if isinstance(value, (int, str)) and str(value).isdigit() else None
