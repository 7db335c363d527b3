"""What a plan is made from, besides the recipe: command-line options and the host facts.

``BuildOptions`` holds what the user typed (None: not given). ``BuildHost`` holds what probing
this machine found that the plan needs (compiler paths, the CUDA home, ccache, the Python that
creates the build environment, the memory-based job count). Both are plain frozen data, so
``make_plan`` stays pure and unit tests build them by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("torch", "torchvision")


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class BuildHost:
    """Facts about this machine the plan uses; None where nothing was found."""

    gcc: Path | None = None  # /usr/bin/gcc-11 for a recipe with gcc = "11"
    gxx: Path | None = None
    cuda_home: Path | None = None  # a toolkit whose nvcc reports the recipe's CUDA version
    cuda_home_source: str = "host probe"
    cudnn_root: Path | None = None
    ccache: Path | None = None
    sccache: Path | None = None
    python: Path | None = None  # a python of the recipe's version, to create a venv with
    max_jobs: int = 1
    max_jobs_reason: str = "default"
    update_alternatives: str = "update-alternatives"
