"""Portable builds: whether a build is one, with its origin, and which compiler it may use.

A portable build compiles against an old glibc instead of this machine's, so the wheel runs on
other distributions and carries the ``manylinux_2_X`` tag its symbol versions allow (PEP 600).
Its compiler is conda-forge's ``gcc_linux-64``/``gxx_linux-64`` of the pinned major with
conda-forge's ``sysroot_linux-64`` of the floor glibc (``[sysroot]`` in
``srcbuild/toolchain/data/conda.toml``, with its sources) installed in the same prefix: that gcc
is configured ``--with-sysroot`` into its own prefix, so it needs no flag. A distribution's gcc
links the machine's glibc and is refused with a finding; a conda gcc that already has that
sysroot beside it (an activated conda environment) is accepted.

Precedence (``portable_setting``, which ``srcbuild.resolve.decide`` decides with the build's other
settings): default (no) < recipe ``[build] portable`` < ``SRCBUILD_PORTABLE`` (or the config file's
``portable``) < ``--portable``. Pure: the host's answer comes in as a ``toolchain.needs.Need``.
Light on purpose: ``srcbuild doctor`` asks each recipe's sysroot without importing the resolver.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.errors import UsageError
from srcbuild.findings import Finding, Severity
from srcbuild.precedence import Chosen, from_cli, from_env_bool, precedence
from srcbuild.recipe import Recipe

if TYPE_CHECKING:
    from srcbuild.resolve.inputs import SysrootGcc
    from srcbuild.toolchain.needs import Need

PEP600 = "https://peps.python.org/pep-0600/"
PORTABLE_VAR = "SRCBUILD_PORTABLE"


def portable_setting(recipe: Recipe, cli_portable: bool | None, environ: Mapping[str, str]) -> Chosen[bool]:
    """default (no) < recipe ``[build] portable`` < ``SRCBUILD_PORTABLE`` < ``--portable`` (``cli_portable``)."""
    name = recipe.path.name if recipe.path else recipe.name
    in_recipe = recipe.build.portable
    flag = "--portable" if cli_portable else "--no-portable"
    return precedence(
        Chosen(False, "default"),
        None if in_recipe is None else Chosen(in_recipe, f"recipe {name} [build.portable]"),
        from_env_bool(environ, PORTABLE_VAR),
        from_cli(cli_portable, flag),
    )


def recipe_sysroot(recipe: Recipe, environ: Mapping[str, str], portable: bool | None = None) -> str | None:
    """The sysroot glibc a build of ``recipe`` compiles against ("2.17"), None when it is not
    portable: for the commands that provision or report what a recipe needs (``toolchain install
    --recipe``, ``doctor``), decided as a build decides it (``portable`` is ``--portable``)."""
    if not portable_setting(recipe, portable, environ).value:
        return None
    return sysroot_glibc(environ)


def sysroot_glibc(environ: Mapping[str, str]) -> str:
    """The glibc of the sysroot portable builds use (``[sysroot] glibc`` of the toolchain data)."""
    from srcbuild.toolchain.data_files import load_facts

    sysroot = load_facts(environ).sysroot
    if sysroot is None:
        raise UsageError(
            "the toolchain data has no [sysroot] table: a portable build cannot be made",
            "unset SRCBUILD_TOOLCHAIN_DATA, or add a [sysroot] table to its conda.toml",
        )
    return sysroot.glibc


def sysroot_gcc(need: Need, glibc: str, sysroot_path: str, toolchain_dir: Path) -> SysrootGcc:
    """The portable compiler as the gcc request's ``toolchain.needs.Need`` says: the host's conda
    gcc, a provisioned prefix, a prefix the build fetches first (into ``toolchain_dir``), or none."""
    from srcbuild.resolve.inputs import SysrootGcc
    from srcbuild.toolchain.store import toolchain_key

    major = need.request.version.split(".")[0]
    if need.status == "host" and need.where is not None:
        gcc = need.where
        gxx = gcc.with_name(gcc.name.replace("gcc", "g++", 1))
        return SysrootGcc(glibc, gcc, gxx, None, gcc.parent.parent / sysroot_path, "host")
    if need.status == "provisioned" and need.where is not None:
        prefix = need.where
    elif need.status == "fetch" and need.offer is not None:
        prefix = toolchain_dir / toolchain_key(need.offer.name, need.offer.version, need.offer.provider)
    else:
        return SysrootGcc(glibc, None, why=need.why)
    bin_dir = prefix / "bin"
    return SysrootGcc(
        glibc, bin_dir / f"gcc-{major}", bin_dir / f"g++-{major}", None, prefix / sysroot_path, need.status
    )


def refused_compiler(recipe: Recipe, choice: SysrootGcc, host_gcc: Path | None) -> Finding:
    """Why a portable build has no compiler: the host's gcc links this machine's glibc."""
    major = recipe.toolchain.gcc.split(".")[0]
    host = f"; the host's {host_gcc} links this machine's glibc and is not used" if host_gcc else ""
    return Finding(
        "portable-compiler",
        Severity.ERROR,
        f"a portable build needs conda-forge's gcc_linux-64 {major} with sysroot_linux-64 {choice.glibc}{host}"
        + (f" ({choice.why})" if choice.why else ""),
        source=PEP600,
        fix=f"srcbuild toolchain install gcc {major} --from conda --sysroot {choice.glibc}",
        field="build.portable",
    )
