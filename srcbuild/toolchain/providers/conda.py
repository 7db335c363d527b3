"""gcc/g++ and MPI from conda channels, installed by the embedded backend (py-rattler) into a prefix.

gcc: conda-forge's ``gcc_linux-64``/``gxx_linux-64`` of the pinned major bring relocatable
compilers named ``bin/x86_64-conda-linux-gnu-gcc``/``-g++`` with their own sysroot. The prefix
gets ``bin/gcc-N`` and ``bin/g++-N`` links to them, so the build finds and registers this gcc in its
private update-alternatives tree exactly as it does a distribution's ``/usr/bin/gcc-N``.

gcc with a sysroot (a portable build): the same packages plus conda-forge's ``sysroot_linux-64`` of
the requested glibc, solved into one prefix (store key ``gcc-11-sysroot2.17-conda``). conda-forge's
gcc is configured ``--with-sysroot=$PREFIX/x86_64-conda-linux-gnu/sysroot`` (ctng-compilers-feedstock,
recipe/build.sh), so it compiles and links against that glibc with no flag; provisioning checks that
``gcc -print-sysroot`` names the prefix's sysroot and refuses a compiler that does not.

MPI: ``openmpi`` or ``mpich`` of the pinned version; the prefix's ``bin/mpicc`` is what
``USE_MPI=1`` finds first on PATH.

MAGMA: the pytorch channel's ``magma-cudaXY`` for the recipe's CUDA, in a prefix of its own
(``lib/libmagma``, ``include/magma.h``): the build points ``MAGMA_HOME`` at it, which is where
torch's ``cmake/Modules/FindMAGMA.cmake`` looks (``HINTS $ENV{MAGMA_HOME}``, suffixes lib, include).

CUDA: the NVIDIA channel's ``cuda-nvcc``, ``cuda-cudart-dev``, ``cuda-libraries-dev`` ... of the
pinned release. Their headers and libraries sit under ``targets/x86_64-linux/``; the prefix gets
``include/`` and ``lib64/`` links to them so it works as ``CUDA_HOME``, and its nvcc must report
the pinned release.

Channel names go through the same routing as build environments (``SRCBUILD_CHANNEL_MIRRORS``,
``SRCBUILD_CHANNEL_ALIAS``); rattler checks each package against the channel's sha256.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srcbuild import proc
from srcbuild.envs.prefix_install import solve_and_install
from srcbuild.errors import EnvironmentError_, MirrorMissing, StepFailed
from srcbuild.offline import DIR_VAR
from srcbuild.precedence import env_value
from srcbuild.toolchain.facts import CondaSysroot, CondaTool, ToolchainFacts, release_of
from srcbuild.toolchain.fetches import CondaPiece, Fetches
from srcbuild.toolchain.providers.base import Context, Offer, Request
from srcbuild.toolchain.providers.cuda_home import check_complete, check_nvcc, link_targets_layout
from srcbuild.toolchain.store import Provisioned, Source


def _tool_for(request: Request, facts: ToolchainFacts) -> CondaTool | None:
    if request.tool == "gcc":
        gcc = facts.gcc
        return gcc if gcc is not None and request.version.split(".")[0] in gcc.majors else None
    if request.tool == "mpi":
        return facts.mpi.get(request.flavour or "openmpi")
    if request.tool == "cuda":
        cuda = facts.cuda_conda
        return cuda if cuda is not None and release_of(request.version) in cuda.versions else None
    if request.tool == "magma":
        magma = facts.magma
        if magma is None or release_of(request.cuda or request.version) not in magma.versions:
            return None
        return magma if all(magma.runs_on(arch) for arch in request.archs) else None
    return None


def _specs(request: Request, tool: CondaTool, facts: ToolchainFacts) -> tuple[str, ...]:
    if request.tool == "gcc":
        # "10.2" (a pinned good release, toolchain.needs.gcc_release) gives gcc_linux-64 10.2.*
        specs = tool.specs(major=request.version)
        if request.sysroot:
            assert facts.sysroot is not None
            specs += dataclasses.replace(facts.sysroot, glibc=request.sysroot).specs()
        return specs
    if request.tool == "cuda":
        return tool.specs(version=release_of(request.version))
    if request.tool == "magma":
        return tool.specs(nodot=release_of(request.cuda or request.version).replace(".", ""))
    return tool.specs(version=request.version)


def _conda(table: Mapping[str, Any]) -> CondaTool:
    return CondaTool(
        channel=str(table.get("channel", "conda-forge")),
        packages=tuple(str(p) for p in table.get("packages", ())),
        source=str(table.get("source", "")),
        triplet=str(table.get("triplet", "")),
        majors=tuple(str(m) for m in table.get("majors", ())),
        versions=tuple(str(v) for v in table.get("versions", ())),
        archs=tuple(str(a) for a in table.get("archs", ())),
    )


def _sysroot(table: Mapping[str, Any]) -> CondaSysroot:
    return CondaSysroot(
        channel=str(table.get("channel", "conda-forge")),
        packages=tuple(str(p) for p in table.get("packages", ())),
        glibc=str(table["glibc"]),
        path=str(table.get("path", "x86_64-conda-linux-gnu/sysroot")),
        source=str(table.get("source", "")),
    )


def channel_and_specs(request: Request, facts: ToolchainFacts) -> tuple[str, tuple[str, ...]] | None:
    """The channel and match specs this provider installs for ``request`` (a mirror gathers them)."""
    tool = _tool_for(request, facts)
    if tool is None or (request.sysroot and facts.sysroot is None):
        return None
    return tool.channel, _specs(request, tool, facts)


class CondaProvider:
    name = "conda"
    tools: tuple[str, ...] = ("cuda", "gcc", "mpi", "magma")
    data_file = "conda.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        """This provider's rows, from its data file's tables."""
        return ToolchainFacts(
            gcc=_conda(data["gcc"]) if "gcc" in data else None,
            mpi={name: _conda(table) for name, table in data.get("mpi", {}).items()},
            cuda_conda=_conda(data["cuda"]) if "cuda" in data else None,
            magma=_conda(data["magma"]) if "magma" in data else None,
            sysroot=_sysroot(data["sysroot"]) if "sysroot" in data else None,
        )

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        """The URL this route fetches from first, probed before it is chosen (``toolchain.reach``)."""
        return None  # its hosts are not probed: nothing to fall through to

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        """What provisioning ``offer`` downloads (``srcbuild mirror create`` gathers it), or None
        when the data names no files for it."""
        found = channel_and_specs(offer.request, facts)
        return Fetches(conda=(CondaPiece(found[0], found[1], offer.describe()),)) if found else None

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        tool = _tool_for(request, facts)
        if tool is None or (request.sysroot and facts.sysroot is None):
            return None
        name = (request.flavour or "openmpi") if request.tool == "mpi" else request.tool
        return Offer(
            request=request,
            provider=self.name,
            name=name,
            version=request.store_version,
            origin=f"{tool.channel}: {' '.join(_specs(request, tool, facts))}",
            details={"channel": tool.channel},
        )

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        tool = _tool_for(offer.request, facts)
        assert tool is not None
        from srcbuild.envs.channels import routing_from  # only when provisioning

        routing = routing_from(environ=ctx.environ)
        specs = _specs(offer.request, tool, facts)
        url = routing.base_url(tool.channel)
        try:
            installed = solve_and_install(specs, [url], target, final, ctx.work_dir / "conda", tool.channel)
            sources = [Source(*file) for file in installed]
        except EnvironmentError_ as exc:
            mirror_dir = env_value(ctx.environ, DIR_VAR)
            if not mirror_dir:
                raise
            raise MirrorMissing(
                f"{offer.request.label} ({' '.join(specs)}) is not in the mirror {mirror_dir}'s "
                f"{tool.channel} channel ({exc.message})",
                f"add it on a connected machine: srcbuild mirror create {mirror_dir} --recipe RECIPE",
            ) from None
        facts_out: dict[str, str] = {}
        if offer.request.tool == "gcc":
            facts_out = _link_gcc(target, tool.triplet, offer.request.version.split(".")[0])
            if offer.request.sysroot and facts.sysroot is not None:
                gcc = target / facts_out["gcc"]
                facts_out.update(_check_sysroot(gcc, target, final, facts.sysroot.path, offer.request.sysroot))
        elif offer.request.tool == "cuda":
            link_targets_layout(target)
            release = release_of(offer.request.version)
            facts_out = {"nvcc": check_nvcc(target, release, f"CUDA {release} from {tool.channel}")}
            check_complete(target, facts_out["nvcc"], f"CUDA {release} from {tool.channel}")
        elif offer.request.tool == "magma":
            facts_out = _check_magma(target, offer.origin)
        elif not (target / "bin" / "mpicc").exists():
            raise StepFailed(f"{offer.origin} installed no bin/mpicc", "check the channel's package")
        return Provisioned(tuple(sources), facts_out)


def _link_gcc(prefix: Path, triplet: str, major: str) -> dict[str, str]:
    bin_dir = prefix / "bin"
    gcc = bin_dir / f"{triplet}-gcc"
    gxx = bin_dir / f"{triplet}-g++"
    if not gcc.exists():
        raise StepFailed(f"the conda compiler package installed no bin/{gcc.name}", "check the channel's package")
    (bin_dir / f"gcc-{major}").symlink_to(gcc.name)
    if gxx.exists():
        (bin_dir / f"g++-{major}").symlink_to(gxx.name)
    version = (proc.probe([str(gcc), "-dumpfullversion", "-dumpversion"]) or "").strip()
    if version.split(".")[0] != major:
        raise StepFailed(
            f"bin/{gcc.name} reports gcc {version or 'nothing'}, not {major}", "check the channel's package"
        )
    return {"gcc": f"bin/gcc-{major}", "gxx": f"bin/g++-{major}" if gxx.exists() else "", "gcc_version": version}


def _check_magma(prefix: Path, origin: str) -> dict[str, str]:
    """What torch's FindMAGMA needs: a ``lib/libmagma`` and ``include/magma.h``."""
    libs = sorted(p.name for p in (prefix / "lib").glob("libmagma.*")) if (prefix / "lib").is_dir() else []
    if not libs or not (prefix / "include" / "magma.h").is_file():
        raise StepFailed(f"{origin} installed no lib/libmagma and include/magma.h", "check the channel's package")
    return {"magma_lib": f"lib/{libs[0]}"}


def _check_sysroot(gcc: Path, prefix: Path, final: Path, where: str, glibc: str) -> dict[str, str]:
    """The compiler must build against the sysroot installed with it: ``gcc -print-sysroot`` names
    the prefix's sysroot (as installed here, or as it will be once the prefix is in place)."""
    if not (prefix / where).is_dir():
        raise StepFailed(f"sysroot_linux-64 {glibc} installed no {where} in the prefix", "check the channel's package")
    said = (proc.probe([str(gcc), "-print-sysroot"]) or "").strip()
    accepted = {os.path.realpath(prefix / where), os.path.normpath(final / where)}
    if not said or (os.path.realpath(said) not in accepted and os.path.normpath(said) not in accepted):
        raise StepFailed(
            f"{gcc.name} builds against the sysroot {said or '/'}, not the {where} of its prefix: "
            "a portable build would link this machine's glibc",
            "use conda-forge's gcc_impl_linux-64, which is configured --with-sysroot",
        )
    return {"sysroot": where, "sysroot_glibc": glibc}
