"""CUDA (11.4 and later) from NVIDIA's redistributable component archives, assembled into one home.

Each component of the version's ``redistrib_<version>.json`` that the data lists (nvcc, cudart,
cccl, nvrtc, nvtx, cupti, cuBLAS, cuSPARSE, cuSOLVER, cuFFT, cuRAND, cuobjdump, ...) is downloaded
with its sha256 checked and unpacked; every archive holds one top directory
(``<component>-linux-x86_64-<version>-archive/``) whose ``bin``, ``include``, ``lib``, ``nvvm`` ...
are merged into the home, which is then the layout NVIDIA's own installer makes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srcbuild.errors import StepFailed
from srcbuild.toolchain.download import Artifact
from srcbuild.toolchain.facts import Redist, RedistComponent, ToolchainFacts, release_of
from srcbuild.toolchain.fetches import Download, Fetches
from srcbuild.toolchain.providers.base import Context, Offer, Request
from srcbuild.toolchain.providers.cuda_home import check_complete, check_nvcc, copy_tree
from srcbuild.toolchain.store import Provisioned, Source, rmtree


def unpack_archive(archive: Path, into: Path) -> Path:
    """Unpack a .tar.xz/.tgz with no path leaving ``into``; return its single top directory (or ``into``)."""
    import tarfile  # only when unpacking: doctor and plan import this module for its offers

    into.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            for member in members:
                name = Path(member.name)
                if name.is_absolute() or ".." in name.parts:
                    raise StepFailed(f"{archive.name}: unsafe path {member.name} in the archive", "report it")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, filter="tar")
            else:  # pragma: no cover - Python < 3.12 without the backported filters
                tar.extractall(into)
    except (tarfile.TarError, OSError) as exc:
        raise StepFailed(
            f"unpacking {archive.name} failed: {exc}", f"rm {archive} and run the same command again"
        ) from None
    tops = list(into.iterdir())
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else into


class RedistProvider:
    name = "redist"
    tools: tuple[str, ...] = ("cuda",)
    data_file = "cuda_redist.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        """This provider's rows, from its data file's tables."""
        redists = tuple(
            Redist(
                str(r["version"]),
                str(r["base"]),
                str(r.get("manifest", "")),
                tuple(
                    RedistComponent(str(c["name"]), str(c["version"]), str(c["path"]), str(c["sha256"]), int(c["size"]))
                    for c in r.get("components", [])
                ),
                str(r.get("source", "")),
            )
            for r in data.get("redist", [])
        )
        return ToolchainFacts(redists=redists)

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        """The URL this route fetches from first, probed before it is chosen (``toolchain.reach``)."""
        redist = facts.redist_for(offer.request.version)
        return redist.url(redist.components[0]) if redist and redist.components else None

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        """What provisioning ``offer`` downloads (``srcbuild mirror create`` gathers it), or None
        when the data names no files for it."""
        redist = facts.redist_for(offer.request.version)
        if redist is None:
            return None
        why = offer.describe()
        return Fetches(downloads=tuple(Download(redist.url(c), c.sha256, c.size, why) for c in redist.components))

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        if request.tool != "cuda":
            return None
        redist = facts.redist_for(request.version)
        if redist is None:
            return None
        return Offer(
            request=request,
            provider=self.name,
            name="cuda",
            version=release_of(redist.version),
            origin=f"NVIDIA redist {redist.manifest} ({len(redist.components)} components)",
            size=redist.size,
        )

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        redist = facts.redist_for(offer.request.version)
        assert redist is not None
        scratch = ctx.work_dir / f"redist-{redist.version}"
        sources = []
        for component in redist.components:
            fetched = ctx.downloader.fetch(Artifact(redist.url(component), component.sha256, component.size))
            top = unpack_archive(fetched.path, scratch / component.name)
            for item in sorted(top.iterdir()):
                if item.name in ("LICENSE", "README"):
                    continue
                if item.is_dir():
                    copy_tree(item, target / item.name)
            sources.append(Source(fetched.url, component.sha256, fetched.size))
        if (target / "lib").is_dir() and not (target / "lib64").exists():
            (target / "lib64").symlink_to("lib")  # the path torch's build and CMake's FindCUDA look in
        nvcc_version = check_nvcc(target, release_of(redist.version), f"CUDA {redist.version} from redist")
        check_complete(target, nvcc_version, f"CUDA {redist.version} from redist")
        rmtree(scratch)
        return Provisioned(tuple(sources), {"nvcc": nvcc_version})
