"""What every provider is: a ``Protocol``, the request it answers and the offer it makes.

A provider first *offers* (pure: from the data alone, no network) to serve a ``Request`` such as
"cuda 9.2" with an ``Offer`` saying from where and how big; ``provision`` then fills a temp
directory that the store renames into place. ``Context`` carries what doing needs: the downloader,
the log, where to print, and the environment to run tools with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import IO, Any, Protocol

from srcbuild import proc
from srcbuild.errors import MirrorMissing, StepFailed
from srcbuild.files import human_size
from srcbuild.offline import DIR_VAR, missing_requirement
from srcbuild.precedence import env_value
from srcbuild.records import record
from srcbuild.toolchain.download import Downloader
from srcbuild.toolchain.facts import ToolchainFacts, release_of
from srcbuild.toolchain.fetches import Fetches
from srcbuild.toolchain.store import Provisioned

TOOLS = ("cuda", "cudnn", "gcc", "mpi", "nccl", "magma")


@record
class Request:
    """One toolchain pin to provision: ``cuda 9.2``, ``cudnn 7.6`` (for a CUDA), ``gcc 7`` ..."""

    tool: str
    version: str
    cuda: str | None = None  # cuDNN, NCCL and MAGMA are built for one CUDA
    flavour: str | None = None  # MPI: openmpi or mpich
    archs: tuple[str, ...] = ()  # NCCL: compute capabilities to build for
    sysroot: str | None = None  # gcc of a portable build: the glibc of the sysroot beside it ("2.17")

    @property
    def label(self) -> str:
        if self.tool == "magma":
            return f"MAGMA for CUDA {self.cuda or self.version}"
        names = {"cuda": "CUDA", "cudnn": "cuDNN", "gcc": "gcc", "mpi": self.flavour or "MPI", "nccl": "NCCL"}
        with_sysroot = f" with sysroot glibc {self.sysroot}" if self.sysroot else ""
        return f"{names.get(self.tool, self.tool)} {self.version}{with_sysroot}"

    @property
    def store_version(self) -> str:
        """The version part of the prefix's store key: ``11``, or ``11-sysroot2.17`` for a portable gcc."""
        if self.tool == "magma":  # one magma-cudaXY per CUDA release: "cuda9.2"
            return "cuda" + release_of(self.cuda or self.version)
        return f"{self.version}-sysroot{self.sysroot}" if self.sysroot else self.version


@record
class Offer:
    """A provider's answer to a request: what it will make, from where, and how big the download is."""

    request: Request
    provider: str
    name: str  # the store key's name ("cuda")
    version: str  # the store key's version ("9.2", "7.6.5.32-cuda9.2")
    origin: str  # where the files come from, in words
    size: int | None = None  # bytes to download, when the data knows
    details: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        size = f", {human_size(self.size)}" if self.size else ""
        return f"{self.request.label} ({self.provider}{size})"

    def to_json(self) -> dict[str, object]:
        return {
            "tool": self.request.tool,
            "pin": self.request.version,
            "provider": self.provider,
            "name": self.name,
            "version": self.version,
            "origin": self.origin,
            "size": self.size,
        }


@record
class Context:
    """What provisioning needs besides the offer."""

    downloader: Downloader
    environ: Mapping[str, str]
    work_dir: Path  # scratch space (apt lists, extracted installers) lives below it
    log_path: Path | None = None
    stream: IO[str] | None = None
    homes: Mapping[str, Path] = field(default_factory=dict)  # tool -> a home this request builds on (CUDA)


class Provider(Protocol):
    """One way of provisioning tools: it reads its own data file, offers what it can for a request,
    says what an offer downloads (for ``mirror create``) and provisions it."""

    name: str
    tools: tuple[str, ...]
    data_file: str  # its file in toolchain/data/ (and in each SRCBUILD_TOOLCHAIN_DATA directory)

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts: ...

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None: ...

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None: ...

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None: ...

    def provision(
        self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context
    ) -> Provisioned: ...


def run_step(
    argv: list[str], ctx: Context, what: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> None:
    """Run one provisioning command through ``proc``; a failure names the step and the log."""
    from srcbuild.console import SETTINGS, Verbosity

    verbose = SETTINGS.verbosity is Verbosity.VERBOSE  # the raw command with -v; one line of what it does otherwise
    if ctx.stream is not None and not verbose and SETTINGS.verbosity is not Verbosity.QUIET:
        print(f"  {what}", file=ctx.stream, flush=True)
    try:
        result = proc.run(
            argv, cwd=cwd, env=env or ctx.environ, log_path=ctx.log_path, echo=ctx.stream if verbose else None
        )
    except FileNotFoundError:
        raise StepFailed(
            f"{what}: {argv[0]} is not installed", f"install {argv[0]} and run the same command again"
        ) from None
    if not result.ok:
        last = next((line for line in reversed(result.tail) if line.strip()), "")
        where = f"see {ctx.log_path}" if ctx.log_path else "rerun with --debug"
        mirror_dir = env_value(ctx.environ, DIR_VAR)
        lacking = missing_requirement(result.tail) if mirror_dir else None
        if lacking is not None:
            raise MirrorMissing(
                f"{what}: {lacking} is not in the mirror {mirror_dir}'s package index",
                f"add it on a connected machine: srcbuild mirror create {mirror_dir} --recipe RECIPE",
            )
        raise StepFailed(f"{what} failed (exit {result.returncode}): {last}".rstrip(": "), where)
