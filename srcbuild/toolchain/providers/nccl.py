"""NCCL built from source for exactly the recipe's architectures.

NCCL's own build interface: ``make -j N src.build CUDA_HOME=<home> NVCC_GENCODE="-gencode=arch=
compute_XY,code=sm_XY ..." BUILDDIR=<dir>`` leaves ``include/nccl.h`` and ``lib/libnccl*`` in
``BUILDDIR``. The source is a git checkout of the tag the data names (or a local tree given in
the request's offer details), copied so the build never writes into it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from srcbuild.errors import StepFailed, UsageError
from srcbuild.toolchain.facts import NcclSource, ToolchainFacts
from srcbuild.toolchain.fetches import Fetches, GitSource
from srcbuild.toolchain.providers.base import Context, Offer, Request, run_step
from srcbuild.toolchain.store import Provisioned, Source, rmtree


def nvcc_gencode(archs: Sequence[str]) -> str:
    """ "3.0", "3.5" -> "-gencode=arch=compute_30,code=sm_30 -gencode=arch=compute_35,code=sm_35"."""
    out = []
    for arch in archs:
        digits = arch.replace(".", "")
        out.append(f"-gencode=arch=compute_{digits},code=sm_{digits}")
    return " ".join(out)


class NcclProvider:
    name = "source"
    tools: tuple[str, ...] = ("nccl",)
    data_file = "nccl.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        """This provider's rows, from its data file's tables."""
        nccl = tuple(
            NcclSource(str(n["tag"]), str(n["repo"]), str(n.get("lowest_cc", "")), str(n.get("source", "")))
            for n in data.get("nccl", [])
        )
        return ToolchainFacts(nccl=nccl)

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        """The URL this route fetches from first, probed before it is chosen (``toolchain.reach``)."""
        return None  # its hosts are not probed: nothing to fall through to

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        """What provisioning ``offer`` downloads (``srcbuild mirror create`` gathers it), or None
        when the data names no files for it."""
        nccl = next((n for n in facts.nccl if n.tag.lstrip("v").startswith(offer.request.version)), None)
        return Fetches(repos=(GitSource(nccl.repo, nccl.tag, offer.describe()),)) if nccl else None

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        if request.tool != "nccl" or not request.archs:
            return None
        source = next((n for n in facts.nccl if n.tag.lstrip("v").startswith(request.version)), None)
        if source is None:
            return None
        archs = "+".join(a.replace(".", "") for a in request.archs)
        return Offer(
            request=request,
            provider=self.name,
            name="nccl",
            version=f"{request.version}-sm{archs}",
            origin=f"{source.repo} at {source.tag}, built for {', '.join(request.archs)}",
            details={"repo": source.repo, "tag": source.tag},
        )

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        cuda_home = ctx.homes.get("cuda")
        if cuda_home is None:
            raise UsageError(
                "building NCCL needs a CUDA toolkit", "provision CUDA first: srcbuild toolchain install cuda X.Y"
            )
        scratch = ctx.work_dir / f"nccl-{offer.version}"
        rmtree(scratch)
        src = scratch / "src"
        repo, tag = offer.details["repo"], offer.details["tag"]
        run_step(
            ["git", "clone", "-q", "--depth", "1", "--branch", tag, repo, str(src)], ctx, f"git clone {repo} {tag}"
        )
        build = scratch / "build"
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        argv = [
            "make",
            "-j",
            jobs,
            "src.build",
            f"CUDA_HOME={cuda_home}",
            f"NVCC_GENCODE={nvcc_gencode(offer.request.archs)}",
        ]
        argv.append(f"BUILDDIR={build}")
        run_step(argv, ctx, f"make src.build of NCCL {tag}", cwd=src)
        if not (build / "include" / "nccl.h").is_file() or not (build / "lib").is_dir():
            raise StepFailed(f"NCCL {tag}: make src.build left no include/nccl.h and lib/", "see the log")
        shutil.copytree(build / "include", target / "include", symlinks=True)
        shutil.copytree(build / "lib", target / "lib", symlinks=True)
        rmtree(scratch)
        return Provisioned(
            (Source(f"{repo}@{tag}", "", 0),), {"archs": ",".join(offer.request.archs), "cuda": str(cuda_home)}
        )
