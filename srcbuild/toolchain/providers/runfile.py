"""CUDA before 11.4 from NVIDIA's runfile installers: toolkit only, into the prefix.

The installer runs as ``sh FILE --silent --toolkit <path_flag>=PREFIX --tmpdir=SCRATCH --override``:
``--toolkit`` alone installs neither the driver nor the samples, ``--override`` skips the
installer's own compiler check (srcbuild checks the host compiler itself), and ``TMPDIR`` and
``--tmpdir`` keep its scratch files in srcbuild's directory. Installers before 10.1 take
``--toolkitpath``, later ones ``--installpath`` (the data says which).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srcbuild.toolchain.download import Artifact
from srcbuild.toolchain.facts import Runfile, ToolchainFacts, data_size, release_of
from srcbuild.toolchain.fetches import Download, Fetches
from srcbuild.toolchain.providers.base import Context, Offer, Request, run_step
from srcbuild.toolchain.providers.cuda_home import check_complete, check_nvcc
from srcbuild.toolchain.store import Provisioned, Source, rmtree


def installer_argv(runfile: Path, path_flag: str, prefix: Path, tmpdir: Path) -> list[str]:
    return ["sh", str(runfile), "--silent", "--toolkit", f"{path_flag}={prefix}", f"--tmpdir={tmpdir}", "--override"]


class RunfileProvider:
    name = "runfile"
    tools: tuple[str, ...] = ("cuda",)
    data_file = "cuda_runfile.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        """This provider's rows, from its data file's tables."""
        runfiles = tuple(
            Runfile(
                str(r["version"]),
                str(r["url"]),
                str(r.get("sha256", "")),
                str(r.get("path_flag", "--toolkitpath")),
                data_size(r.get("size")),
                str(r.get("source", "")),
            )
            for r in data.get("runfile", [])
        )
        return ToolchainFacts(runfiles=runfiles)

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        """The URL this route fetches from first, probed before it is chosen (``toolchain.reach``)."""
        runfile = facts.runfile_for(offer.request.version)
        return runfile.url if runfile else None

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        """What provisioning ``offer`` downloads (``srcbuild mirror create`` gathers it), or None
        when the data names no files for it."""
        runfile = facts.runfile_for(offer.request.version)
        if runfile is None:
            return None
        return Fetches(downloads=(Download(runfile.url, runfile.sha256, runfile.size, offer.describe()),))

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        if request.tool != "cuda":
            return None
        runfile = facts.runfile_for(request.version)
        if runfile is None:
            return None
        return Offer(
            request=request,
            provider=self.name,
            name="cuda",
            version=release_of(runfile.version),
            origin=runfile.url,
            size=runfile.size,
        )

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        runfile = facts.runfile_for(offer.request.version)
        assert runfile is not None
        fetched = ctx.downloader.fetch(Artifact(runfile.url, runfile.sha256, runfile.size))
        scratch = ctx.work_dir / f"runfile-{runfile.version}"
        rmtree(scratch)
        scratch.mkdir(parents=True)
        from srcbuild.envmods import EnvChanges  # only when provisioning

        env = EnvChanges().set("TMPDIR", str(scratch), "runfile scratch").apply(ctx.environ)
        argv = installer_argv(fetched.path, runfile.path_flag, target, scratch)
        run_step(argv, ctx, f"the CUDA {runfile.version} installer", cwd=scratch, env=env)
        nvcc = check_nvcc(target, release_of(runfile.version), f"CUDA {runfile.version} from its runfile")
        check_complete(target, nvcc, f"CUDA {runfile.version} from its runfile")
        rmtree(scratch)
        return Provisioned((Source(fetched.url, runfile.sha256, fetched.size),), {"nvcc": nvcc})
