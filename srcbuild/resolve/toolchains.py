"""Each toolchain piece of a resolved build, with its path, version and provider.

A piece comes from the host, from srcbuild's own toolchain prefixes (``srcbuild toolchain
install``: under ``Paths.toolchain_dir``), or from the build environment when the recipe's
``[env] conda`` installs it; a new source of toolchains is one more ``Provider``.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild.recipe import Recipe
from srcbuild.resolve.inputs import BuildHost
from srcbuild.resolve.model import CompilerChoice, Portable, Provider, ResolvedEnv, Toolchain
from srcbuild.resolve.settings import ResolvedSettings
from srcbuild.rules.host import provided_by_env

# The conda packages that provide each piece inside the build environment (rules/host.py agrees).
ENV_PACKAGES = {
    "gcc": ("gcc", "gcc_linux-64", "gxx_linux-64"),
    "cuda": ("cudatoolkit-dev", "cuda-nvcc", "cuda-toolkit", "cuda"),
    "cudnn": ("cudnn",),
    "mpi": ("openmpi", "mpich"),
    "nccl": ("nccl",),
}


def _provider(recipe: Recipe, piece: str, path: Path | None, toolchain_dir: Path | None = None) -> tuple[Provider, str]:
    if provided_by_env(recipe, *ENV_PACKAGES.get(piece, ())):
        return Provider.ENVIRONMENT, "recipe [env] conda"
    if path is None:
        return Provider.MISSING, "host probe (not found)"
    if toolchain_dir is not None and path.is_relative_to(toolchain_dir):
        return Provider.PROVISIONED, f"host probe (provisioned under {toolchain_dir})"
    return Provider.HOST, "host probe"


def resolve_toolchains(
    recipe: Recipe,
    host: BuildHost,
    settings: ResolvedSettings,
    compiler: CompilerChoice,
    env: ResolvedEnv,
    toolchain_dir: Path | None = None,
    portable: Portable | None = None,
) -> tuple[Toolchain, ...]:
    tc = recipe.toolchain
    out = [
        Toolchain("python", tc.python, None, env.prefix / "bin" / "python", Provider.ENVIRONMENT, env.source),
    ]
    if portable is not None:
        out.extend(_portable_gcc(recipe, host, compiler, portable))
    else:
        provider, source = _provider(recipe, "gcc", host.gcc, toolchain_dir)
        out.append(Toolchain("gcc", tc.gcc, host.gcc_version, compiler.gcc, provider, source))
        out.append(Toolchain("g++", tc.gcc, host.gcc_version, compiler.gxx, provider, source))
    if tc.cuda is None:
        out.append(Toolchain("cuda", None, None, None, Provider.NONE, "recipe (CPU only)"))
        out.append(Toolchain("cudnn", None, None, None, Provider.NONE, "recipe (CPU only)"))
    else:
        home = settings.cuda_home
        provider, _ = _provider(recipe, "cuda", Path(home) if home else None, toolchain_dir)
        version = host.cuda_version if home and host.cuda_home and Path(home) == host.cuda_home else None
        source = _setting_source(settings, "cuda_home")
        out.append(Toolchain("cuda", tc.cuda, version, Path(home) if home else None, provider, source))
        if tc.cudnn:
            provider, source = _provider(recipe, "cudnn", host.cudnn_root, toolchain_dir)
            out.append(Toolchain("cudnn", tc.cudnn, host.cudnn_version, host.cudnn_root, provider, source))
        else:
            out.append(Toolchain("cudnn", None, None, None, Provider.NONE, "recipe (no toolchain.cudnn)"))
    out.append(_mpi(recipe, host))
    out.append(_nccl(recipe, host))
    out.append(_magma(recipe, host))
    return tuple(out)


def _portable_gcc(recipe: Recipe, host: BuildHost, compiler: CompilerChoice, portable: Portable) -> list[Toolchain]:
    """A portable build's gcc, g++ and sysroot: the conda gcc with its sysroot, or missing."""
    found = host.sysroot_gcc
    gcc = recipe.toolchain.gcc
    if found is None or found.gcc is None:
        why = "missing: a portable build takes no host gcc (conda gcc + sysroot_linux-64 needed)"
        return [Toolchain(name, gcc, None, None, Provider.MISSING, why) for name in ("gcc", "g++")] + [
            Toolchain("sysroot", portable.glibc, None, None, Provider.MISSING, why)
        ]
    provider = {"host": Provider.HOST, "provisioned": Provider.PROVISIONED}.get(found.status, Provider.PROVISIONED)
    version = found.version or (host.gcc_version if found.gcc == host.gcc else None)
    return [
        Toolchain("gcc", gcc, version, compiler.gcc, provider, found.source),
        Toolchain("g++", gcc, version, compiler.gxx, provider, found.source),
        Toolchain("sysroot", portable.glibc, portable.glibc, found.sysroot, provider, found.source),
    ]


def _setting_source(settings: ResolvedSettings, name: str) -> str:
    return next(s.source for s in settings.settings if s.name == name)


def _mpi(recipe: Recipe, host: BuildHost) -> Toolchain:
    mpi = recipe.mpi
    if not mpi.enabled:
        return Toolchain("mpi", None, None, None, Provider.NONE, "recipe (mpi.enabled = false)")
    from srcbuild.host.facts import version_matches

    for install in getattr(host.facts, "mpi", ()) or ():
        if install.implementation != mpi.implementation:
            continue
        if mpi.version and not version_matches(mpi.version, install.version):
            continue
        if install.mpicc and install.mpicxx:
            provider, source = _provider(recipe, "mpi", install.mpicc)
            where = f"{source} ({install.source})"
            return Toolchain("mpi", mpi.version, install.version, install.mpicc, provider, where)
    provider, source = _provider(recipe, "mpi", None)
    return Toolchain("mpi", mpi.version, None, None, provider, source)


def _magma(recipe: Recipe, host: BuildHost) -> Toolchain:
    """MAGMA: a provisioned ``magma-cudaXY`` prefix (MAGMA_HOME), the recipe's ``[env] conda``, or none."""
    from srcbuild.toolchain.needs import uses_magma

    if recipe.toolchain.cuda is None:
        return Toolchain("magma", None, None, None, Provider.NONE, "recipe (CPU only)")
    if provided_by_env(recipe, "magma-cuda" + recipe.toolchain.cuda.replace(".", "")):
        return Toolchain("magma", None, None, None, Provider.ENVIRONMENT, "recipe [env] conda")
    if not uses_magma(recipe):
        return Toolchain("magma", None, None, None, Provider.NONE, "recipe [build] env USE_MAGMA=0")
    if host.magma_home is None:
        why = "not provisioned (no magma-cudaXY for this CUDA and these GPUs, or --no-provision): no MAGMA"
        return Toolchain("magma", None, None, None, Provider.NONE, why)
    origin = f"srcbuild toolchain (pytorch channel magma-cuda{recipe.toolchain.cuda.replace('.', '')})"
    return Toolchain("magma", None, None, host.magma_home, Provider.PROVISIONED, origin)


def _nccl(recipe: Recipe, host: BuildHost) -> Toolchain:
    if recipe.toolchain.cuda is None:
        return Toolchain("nccl", None, None, None, Provider.NONE, "recipe (CPU only)")
    found = (getattr(host.facts, "nccl", ()) or ())[:1]
    if not found:
        return Toolchain("nccl", None, None, None, Provider.NONE, "host probe (no nccl.h; torch builds its own)")
    header = found[0]
    return Toolchain("nccl", None, header.version, Path(header.header), Provider.HOST, "host probe")
