"""What ``srcbuild mirror create`` gathers for one recipe: its packages' sources and toolchain
(``mirror.gather.needs_of``), the build environment in the form the other machine's backend
installs (conda packages, or every package from pip for a venv), the toolchain's conda pieces on
their channels, and the extensions' sources: their sdists (found on the index pip is configured
with, as ``srcbuild ext`` finds them) or their git repositories at the tag or commit asked for."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from srcbuild.mirror.create import SdistFile, Target
from srcbuild.mirror.gather import Repo
from srcbuild.mirror.pypi import PipSet
from srcbuild.recipe.model import Recipe
from srcbuild.toolchain.facts import ToolchainFacts

Choice = tuple[bool | None, str | None, Sequence[str]]  # (portable, env backend or None: no env, skipped tools)


def make_target(
    recipe: Recipe,
    packages: tuple[str, ...],
    exts: Sequence[str],
    choice: Choice,
    facts: ToolchainFacts,
    prefer: Sequence[str],
    environ: Mapping[str, str],
    dry_run: bool,
) -> Target:
    from srcbuild.envs.backends import installs_conda_packages
    from srcbuild.envs.channels import routing_from
    from srcbuild.envs.spec import EnvSpec, env_spec_for
    from srcbuild.mirror.gather import needs_of
    from srcbuild.resolve.portable import recipe_sysroot

    portable, backend, skips = choice
    sysroot = recipe_sysroot(recipe, environ, portable)
    needs = needs_of(recipe, tuple(p for p in packages if p != "ext"), facts, prefer, sysroot, skip=skips)
    env = None
    pip: list[PipSet] = []
    if backend is not None:
        spec = env_spec_for(recipe, environ=environ)
        conda = installs_conda_packages(backend)
        requirements = spec.pip if conda else spec.as_pip_only().pip
        env = spec if conda else None
        if requirements:
            why = f"the build environment of {recipe.name}"
            pip.append(PipSet(tuple(requirements), python=spec.python, why=why))
    routing = routing_from(environ=environ)
    toolchain_conda = tuple(
        (EnvSpec(recipe.toolchain.python, channels=(piece.channel,), routing=routing, cuda=recipe.toolchain.cuda),
         piece.specs)
        for piece in needs.conda
    )
    wanted = [*exts, *(e.requirement for e in recipe.extensions if "ext" in packages)]
    sdists = () if dry_run else tuple(_sdist(r, environ) for r in wanted if not r.startswith("git+"))
    if dry_run:
        pip += [PipSet((r,), python=recipe.toolchain.python, why="an extension's sdist") for r in wanted
                if not r.startswith("git+")]
    repos = tuple(_git_repo(r) for r in wanted if r.startswith("git+"))
    if repos:
        from dataclasses import replace

        needs = replace(needs, repos=(*needs.repos, *(r for r in repos if r not in needs.repos)))
    return Target(recipe.name, packages, needs, env, tuple(pip), toolchain_conda, sdists, recipe.toolchain.python)


def _sdist(requirement: str, environ: Mapping[str, str]) -> SdistFile:
    from srcbuild.ext.source import find_sdist, parse_requirement, pip_indexes

    found = find_sdist(parse_requirement(requirement), pip_indexes(sys.executable, environ))
    return SdistFile(found.name, found.filename, found.url, found.sha256)


def _git_repo(requirement: str) -> Repo:
    """An extension's git source as a repository the mirror holds at its tag or commit (with its
    submodules, as for torch's sources)."""
    from srcbuild.ext.source import is_commit, parse_requirement

    request = parse_requirement(requirement)
    url, ref = request.git_url or "", request.git_ref or ""
    why = f"extension {request.name}"
    return Repo(url, "", ref, why) if is_commit(ref) else Repo(url, ref, None, why)
