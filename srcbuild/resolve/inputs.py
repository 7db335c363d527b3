"""What a build is resolved from, besides the recipe: command-line options and the host facts.

``BuildOptions`` holds what the user typed (None: not given). ``BuildHost`` holds what probing
this machine found (compiler paths, the CUDA home, ccache, the Python that creates the build
environment, the environment tools on PATH, the memory-based job count, the capacity of the
sccache-dist cluster a build sends its compiles to, the full ``HostFacts`` for the host rules).
Both are plain frozen data, so ``resolve`` decides from data alone and unit tests build them by
hand; ``srcbuild.resolve.probe.probe_build_host`` fills ``BuildHost`` in.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.records import record

if TYPE_CHECKING:
    from srcbuild.host.facts import HostFacts
    from srcbuild.toolchain.planned import PlannedProvision


@record
class BuildOptions:
    """Command-line options of ``srcbuild torch|torchvision|plan``; None means "not given"."""

    package: str = "torch"
    mirrors: tuple[str, ...] = ()
    env_prefix: str | None = None
    env_backend: str | None = None
    max_jobs: int | None = None
    keep_build: bool | None = None
    system_alternatives: bool = False
    cuda_home: str | None = None
    ignore_preflight: bool = False
    git_jobs: int = 8
    remotes: tuple[str, ...] = ()  # shared caches to look in before building (also SRCBUILD_REMOTES)
    trust_unsigned: bool = False  # accept remote entries no trusted signer signed
    compiler_cache: str | None = None  # --compiler-cache sccache|ccache|none
    compiler_cache_url: str | None = None  # --compiler-cache-url s3://bucket/prefix | redis://host:port
    dist_scheduler: str | None = None  # --dist-scheduler URL of an sccache-dist scheduler
    no_provision: bool = False  # --no-provision: never fetch a toolchain; stop and say what is missing
    portable: bool | None = None  # --portable: old glibc sysroot, manylinux tag (srcbuild.resolve.portable)
    accept_moved_tag: bool = False  # --accept-moved-tag: record a tag's new commit (sources.tagpins)
    extension: bool = False  # an extension's build: its toolchain is CUDA and gcc alone (no MAGMA, cuDNN, MPI)
    canary: str = "run"  # torch's canary step: "run", "only" (--canary: stop after it) or "skip" (--no-canary)


@record
class SysrootGcc:
    """The compiler of a portable build: a conda gcc with the sysroot of ``glibc`` in its prefix."""

    glibc: str  # the sysroot's glibc, the floor of the wheel's tag: "2.17"
    gcc: Path | None  # None: nothing provides it (see ``why``)
    gxx: Path | None = None
    version: str | None = None  # the gcc's full version, when known before the build
    sysroot: Path | None = None
    status: str = "missing"  # "host", "provisioned", "fetch" or "missing" (toolchain.needs.Need)
    why: str = ""  # for "missing"

    @property
    def source(self) -> str:
        where = {"host": "host probe (a conda gcc with its sysroot)", "provisioned": "provisioned", "fetch": "fetched"}
        return f"{where.get(self.status, 'missing')}: gcc_linux-64 + sysroot_linux-64 {self.glibc} (portable)"


@record
class DistCluster:
    """What the sccache-dist scheduler of a build reported when the host was probed: its build
    servers and their CPUs (none when it answered nothing usable), and how it was asked."""

    scheduler: str
    servers: int = 0
    cpus: int = 0
    source: str = ""  # "sccache --dist-status; scheduler from command line --dist-scheduler"

    @property
    def usable(self) -> bool:
        return self.servers > 0 and self.cpus > 0

    def describe(self) -> str:
        if self.usable:
            return f"sccache-dist cluster: {self.servers} build server(s), {self.cpus} CPUs"
        return f"the sccache-dist scheduler {self.scheduler} reported no build servers"


@record
class BuildHost:
    """Facts about this machine a build uses; None where nothing was found.

    ``facts`` is the whole probe (``srcbuild.host.HostFacts``) the host rules read; None when the
    host was not probed (``srcbuild install`` and ``cache pull --recipe`` only need the cache key,
    which no host fact changes except ``platform``).
    """

    gcc: Path | None = None  # /usr/bin/gcc-11 for a recipe with gcc = "11"
    gxx: Path | None = None
    gcc_version: str | None = None  # what that gcc's -dumpfullversion said
    cuda_home: Path | None = None  # a toolkit whose nvcc reports the recipe's CUDA version
    cuda_home_source: str = "host probe"
    cuda_version: str | None = None  # what that toolkit's nvcc --version said
    cudnn_root: Path | None = None
    cudnn_version: str | None = None
    ccache: Path | None = None
    sccache: Path | None = None
    python: Path | None = None  # a python of the recipe's version, to create a venv with
    max_jobs: int = 1  # what this machine's memory and cores allow (srcbuild.host.jobs)
    max_jobs_reason: str = "default"
    dist_cluster: DistCluster | None = None  # asked only when the build names an sccache-dist scheduler
    update_alternatives: str = "update-alternatives"
    conda_tools: tuple[tuple[str, str], ...] = ()  # ("micromamba", "/usr/bin/micromamba") found on PATH
    rattler: bool = False  # py-rattler imports in this Python
    host_python_path: str = ""  # its executable: a venv is made with it
    platform: str = "linux_x86_64"  # wheel platform tag, no C library (srcbuild.cache.key.host_platform_tag)
    facts: HostFacts | None = None  # None when the host was not probed
    # srcbuild.toolchain.planned.PlannedProvision: pins the host lacks that a step fetches first;
    # ``facts`` already counts their prefixes as there
    provisioning: tuple[PlannedProvision, ...] = ()
    magma_home: Path | None = None  # a provisioned (or planned) MAGMA prefix: the build's MAGMA_HOME
    # a portable build's compiler (srcbuild.resolve.portable); None when the build is not portable
    sysroot_gcc: SysrootGcc | None = None
