"""cuDNN and NCCL from NVIDIA's wheels on the package index, as a prefix torch's CMake finds.

The wheel the data pins (``pypi.toml``: requirement, file name, sha256, size) is fetched with
``pip download --require-hashes`` from the index pip is configured with, so a site's mirror of the
index, its proxy and certificates are used as for any package; it is unpacked and its package
directory (``nvidia/cudnn``) laid out as::

    include/   cudnn*.h (nccl.h)
    lib64/     libcudnn*.so.8 and their linker names (libcudnn.so -> libcudnn.so.8)
    lib        -> lib64

which torch's CMake finds through ``CUDNN_INCLUDE_DIR``/``CUDNN_LIBRARY`` (cmake/Modules/
FindCUDNN.cmake) and, for NCCL, ``USE_SYSTEM_NCCL=1`` with ``NCCL_ROOT`` (cmake/Modules/
FindNCCL.cmake). The version the headers declare must be the one the data pinned.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srcbuild.capability import ComputeCapability
from srcbuild.errors import StepFailed
from srcbuild.host.toolchain import header_version
from srcbuild.toolchain.facts import IndexWheel, ToolchainFacts, data_size
from srcbuild.toolchain.fetches import Fetches
from srcbuild.toolchain.index_files import IndexFile
from srcbuild.toolchain.providers.base import Context, Offer, Request, run_step
from srcbuild.toolchain.providers.cudnn import CudnnProvider, header_cudnn_version
from srcbuild.toolchain.providers.debian import link_linker_names
from srcbuild.toolchain.store import Provisioned, Source, rmtree

LABELS = {"cudnn": "cuDNN", "nccl": "NCCL"}


def _data_covers(wheel: IndexWheel, archs: tuple[str, ...]) -> bool:
    from srcbuild.verify.kernels import Kernels, covers  # NCCL offers only

    kernels = Kernels(
        frozenset(ComputeCapability.parse(a).sm for a in wheel.sass),
        frozenset(ComputeCapability.parse(a).sm for a in wheel.ptx),
    )
    return all(covers(kernels, ComputeCapability.parse(a)) for a in archs)


def pip_download_argv(wheels: list[IndexWheel], requirements: Path, into: Path) -> list[str]:
    """``pip download`` of exactly these files (``requirements`` gets one ``--hash`` line each)."""
    requirements.write_text("".join(f"{w.requirement} --hash=sha256:{w.sha256}\n" for w in wheels), encoding="utf-8")
    argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    return [*argv, "--require-hashes", "-r", str(requirements), "-d", str(into)]


class PypiProvider:
    name = "pypi"
    tools: tuple[str, ...] = ("cudnn", "nccl")
    data_file = "pypi.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        """This provider's rows, from its data file's tables."""
        wheels = tuple(
            IndexWheel(
                tool=str(w["tool"]),
                version=str(w["version"]),
                cuda=str(w["cuda"]),
                requirement=str(w["requirement"]),
                filename=str(w["filename"]),
                sha256=str(w["sha256"]),
                size=data_size(w.get("size")),
                package=str(w.get("package", "")),
                sass=tuple(str(a) for a in w.get("sass", ())),
                ptx=tuple(str(a) for a in w.get("ptx", ())),
                source=str(w.get("source", "")),
            )
            for w in data.get("wheel", [])
        )
        return ToolchainFacts(index_wheels=wheels)

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        """The URL this route fetches from first, probed before it is chosen (``toolchain.reach``)."""
        return None  # its hosts are not probed: nothing to fall through to

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        """What provisioning ``offer`` downloads (``srcbuild mirror create`` gathers it), or None
        when the data names no files for it."""
        request = offer.request
        wheel = facts.index_wheel_for(request.tool, request.version, request.cuda) if request.cuda else None
        if wheel is None:
            return None
        return Fetches(index=(IndexFile(request.tool, wheel.requirement, wheel.sha256, wheel.size, wheel.filename),))

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        if request.tool not in self.tools or not request.cuda:
            return None
        wheel = facts.index_wheel_for(request.tool, request.version, request.cuda)
        if wheel is None:
            return None
        if request.tool == "nccl" and not _data_covers(wheel, request.archs):
            return None  # NCCL is built from source for GPUs the wheel's kernels do not run on
        return Offer(
            request=request,
            provider=self.name,
            name=request.tool,
            version=wheel.key_version,
            origin=f"{wheel.requirement} from the package index",
            size=wheel.size,
            details={"requirement": wheel.requirement},
        )

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        request = offer.request
        assert request.cuda is not None
        wheel = facts.index_wheel_for(request.tool, request.version, request.cuda)
        assert wheel is not None
        scratch = ctx.work_dir / f"pypi-{request.tool}-{wheel.key_version}"
        rmtree(scratch)
        (scratch / "wheels").mkdir(parents=True)
        argv = pip_download_argv([wheel], scratch / "requirements.txt", scratch / "wheels")
        try:
            run_step(argv, ctx, f"pip download {wheel.requirement}")
        except StepFailed as exc:
            raise StepFailed(exc.message, _elsewhere(exc.hint, request, facts)) from None
        path = scratch / "wheels" / wheel.filename
        if not path.is_file():
            raise StepFailed(f"pip download {wheel.requirement} left no {wheel.filename}", "see the log")
        package = scratch / "unpacked" / wheel.package
        import zipfile  # only when provisioning: doctor and plan import this module for its offers

        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.namelist() if m.startswith(wheel.package + "/")]
            archive.extractall(scratch / "unpacked", members)
        ignore = shutil.ignore_patterns("__init__.py", "__pycache__")
        if not (package / "include").is_dir() or not (package / "lib").is_dir():
            raise StepFailed(f"{wheel.filename}: no {wheel.package}/include and lib inside", "report it")
        shutil.copytree(package / "include", target / "include", ignore=ignore)
        shutil.copytree(package / "lib", target / "lib64", ignore=ignore)
        link_linker_names(target / "lib64")
        (target / "lib").symlink_to("lib64")
        declared = _declared_version(request.tool, target / "include")
        if declared is None or not wheel.version.startswith(declared):
            raise StepFailed(
                f"{wheel.filename}: its headers declare {LABELS[request.tool]} {declared or 'no version'}, "
                f"not {wheel.version}",
                "check the data row for this wheel",
            )
        size = path.stat().st_size
        rmtree(scratch)
        return Provisioned(
            (Source(f"pip:{wheel.filename}", wheel.sha256, size),),
            {request.tool: declared, "cuda": wheel.cuda, "requirement": wheel.requirement},
        )


def _elsewhere(hint: str | None, request: Request, facts: ToolchainFacts) -> str | None:
    """The failed download's hint, and where NVIDIA's archive serves the same cuDNN (an index that
    cannot be reached or lacks the wheel), the command that takes it from there instead."""
    if CudnnProvider().offer(request, facts) is None:
        return hint
    install = f"srcbuild toolchain install cudnn {request.version} --cuda {request.cuda} --from nvidia"
    build = "export SRCBUILD_TOOLCHAIN_PROVIDERS=nvidia"  # providers.ORDER_VAR (that package imports this one)
    return f"{hint}; NVIDIA's archive serves it too: `{install}` (for a build: `{build}`)"


def _declared_version(tool: str, include: Path) -> str | None:
    if tool == "cudnn":
        return header_cudnn_version(include)
    nccl = include / "nccl.h"
    return header_version(nccl, "NCCL_", "PATCH") if nccl.is_file() else None
