"""cuDNN from NVIDIA's archives: the legacy ``.tgz`` (``cuda/include``, ``cuda/lib64``) and the
redist ``.tar.xz`` (``<dir>/include``, ``<dir>/lib``), installed as a prefix of its own.

The prefix has ``include/`` and ``lib64/`` (``lib`` links to it); the build points
``CUDNN_INCLUDE_DIR``/``CUDNN_LIB_DIR`` at them, so nothing is copied into a CUDA home by hand.
The version the headers declare must be the one the data promised.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srcbuild.errors import StepFailed
from srcbuild.host.toolchain import header_version
from srcbuild.toolchain.download import Artifact
from srcbuild.toolchain.facts import CudnnArchive, ToolchainFacts, data_size, matches
from srcbuild.toolchain.fetches import Download, Fetches
from srcbuild.toolchain.providers.base import Context, Offer, Request
from srcbuild.toolchain.providers.cuda_home import copy_tree
from srcbuild.toolchain.providers.redist import unpack_archive
from srcbuild.toolchain.store import Provisioned, Source, rmtree


def cudnn_key_version(archive: CudnnArchive) -> str:
    return f"{archive.version}-cuda{archive.cuda}"


def header_cudnn_version(include: Path) -> str | None:
    for name in ("cudnn_version.h", "cudnn.h"):
        if (include / name).is_file():
            found = header_version(include / name, "CUDNN_", "PATCHLEVEL")
            if found:
                return found
    return None


class CudnnProvider:
    name = "nvidia"
    tools: tuple[str, ...] = ("cudnn",)
    data_file = "cudnn_archives.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        """This provider's rows, from its data file's tables."""
        cudnn = tuple(
            CudnnArchive(
                str(a["version"]),
                str(a["cuda"]),
                str(a["url"]),
                str(a.get("sha256", "")),
                str(a.get("layout", "legacy")),
                data_size(a.get("size")),
                str(a.get("source", "")),
            )
            for a in data.get("cudnn", [])
        )
        return ToolchainFacts(cudnn=cudnn)

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        """The URL this route fetches from first, probed before it is chosen (``toolchain.reach``)."""
        return None  # its hosts are not probed: nothing to fall through to

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        """What provisioning ``offer`` downloads (``srcbuild mirror create`` gathers it), or None
        when the data names no files for it."""
        request = offer.request
        archive = facts.cudnn_for(request.version, request.cuda) if request.cuda else None
        if archive is None:
            return None
        return Fetches(downloads=(Download(archive.url, archive.sha256, archive.size, offer.describe()),))

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        if request.tool != "cudnn" or not request.cuda:
            return None
        archive = facts.cudnn_for(request.version, request.cuda)
        if archive is None:
            return None
        return Offer(
            request=request,
            provider=self.name,
            name="cudnn",
            version=cudnn_key_version(archive),
            origin=archive.url,
            size=archive.size,
        )

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        assert offer.request.cuda is not None
        archive = facts.cudnn_for(offer.request.version, offer.request.cuda)
        assert archive is not None
        fetched = ctx.downloader.fetch(Artifact(archive.url, archive.sha256, archive.size))
        scratch = ctx.work_dir / f"cudnn-{cudnn_key_version(archive)}"
        rmtree(scratch)
        top = unpack_archive(fetched.path, scratch)
        lib = top / "lib64" if (top / "lib64").is_dir() else top / "lib"
        if not (top / "include").is_dir() or not lib.is_dir():
            raise StepFailed(f"{fetched.path.name}: no include/ and lib/ inside", f"rm {fetched.path}")
        copy_tree(top / "include", target / "include")
        copy_tree(lib, target / "lib64")
        (target / "lib").symlink_to("lib64")
        rmtree(scratch)
        found = header_cudnn_version(target / "include")
        if found is None or not matches(".".join(archive.version.split(".")[:3]), found):
            raise StepFailed(
                f"{fetched.path.name}: its headers declare cuDNN {found or 'no version'}, not {archive.version}",
                "check the data row for this archive",
            )
        return Provisioned((Source(fetched.url, archive.sha256, fetched.size),), {"cudnn": found, "cuda": archive.cuda})
