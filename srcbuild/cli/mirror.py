"""``srcbuild mirror create DIR`` and ``srcbuild mirror verify DIR``: a directory holding what a
recipe's builds download, for machines without a network (``--mirror-dir DIR`` uses it)."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from srcbuild.cli.common import (
    PackageChoice,
    command_environ,
    complete_recipe,
    json_option,
    path_options,
    print_json,
    resolve_paths,
)
from srcbuild.errors import CacheIntegrityError, NotFoundError, UsageError
from srcbuild.files import human_size
from srcbuild.packages import pinned_packages
from srcbuild.precedence import Chosen, env_value, from_cli, from_env, precedence

if TYPE_CHECKING:
    from srcbuild.mirror.create import Target


@click.group("mirror")
def mirror_group() -> None:
    """Gather what recipes need into a directory for machines without a network, and check it."""


@mirror_group.command("create")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--recipe",
    "-r",
    "recipes",
    multiple=True,
    required=True,
    shell_complete=complete_recipe,
    help="Recipe name or .toml path (repeatable).",
)
@click.option(
    "--package",
    "packages",
    multiple=True,
    type=PackageChoice(extra=("ext",)),
    help="Only these packages' sources (repeatable; ext: the recipe's [[extensions]]) "
    "[default: every package the recipe pins].",
)
@click.option(
    "--ext",
    "exts",
    multiple=True,
    metavar="NAME[==VERSION]|git+URL@REF",
    help="An extension's source (repeatable), for srcbuild ext: its sdist with its build requirements, or "
    "its git repository at a tag or commit with its submodules.",
)
@click.option(
    "--torch",
    "torch_versions",
    multiple=True,
    metavar="VERSION",
    help="A torch wheel from the index with its dependencies (repeatable), for srcbuild ext --torch VERSION.",
)
@click.option(
    "--mirror",
    "mirrors",
    multiple=True,
    help="Fetch git repositories through these rules: gitee, PREFIX=REPLACEMENT or a map .toml [env SRCBUILD_MIRROR].",
)
@click.option(
    "--portable/--no-portable",
    default=None,
    help="The toolchain of a portable build [recipe [build] portable, env SRCBUILD_PORTABLE].",
)
@click.option("--no-env", is_flag=True, help="Leave out the build environment's conda and pip packages.")
@click.option(
    "--env-backend",
    type=click.Choice(("conda", "mamba", "micromamba", "rattler", "venv")),
    default=None,
    help="The backend the other machine makes the environment with: venv takes every package from "
    "pip, the others from conda [env SRCBUILD_ENV_BACKEND; default: conda packages].",
)
@click.option(
    "--skip",
    "skips",
    multiple=True,
    type=click.Choice(("cuda", "cudnn", "gcc", "mpi", "nccl", "magma")),
    help="Leave out this toolchain piece (repeatable): the other machine has it.",
)
@click.option(
    "--python",
    "python",
    metavar="X.Y",
    default=None,
    help="The other machine's Python for the pip wheels [default: the recipe's].",
)
@click.option(
    "--platform",
    "platforms",
    multiple=True,
    metavar="TAG",
    help="The other machine's wheel platform, e.g. manylinux2014_x86_64 or manylinux_2_28_x86_64 "
    "(repeatable; its older manylinux tags follow); its glibc is also the conda solve's [default: "
    "wheels for glibc 2.17 on this architecture, the floor srcbuild's portable builds target; conda "
    "packages for glibc 2.28, as srcbuild lock solves].",
)
@click.option("--dry-run", is_flag=True, help="Print what would be gathered and its size from the data; fetch nothing.")
@path_options
@json_option
def create_command(
    directory: str,
    recipes: tuple[str, ...],
    packages: tuple[str, ...],
    mirrors: tuple[str, ...],
    exts: tuple[str, ...],
    torch_versions: tuple[str, ...],
    portable: bool | None,
    no_env: bool,
    env_backend: str | None,
    skips: tuple[str, ...],
    python: str | None,
    platforms: tuple[str, ...],
    dry_run: bool,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Write into DIRECTORY what the recipes' builds download: bare git mirrors of the pinned tags
    with their submodules, the toolchain's downloads (NVIDIA's archives, Debian packages, index
    wheels, conda packages), the patches, the build environment's conda packages as local
    channels and its pip packages as a simple index, with a manifest (sha256, size, origin). A
    second run adds only what is missing."""
    from dataclasses import replace

    from srcbuild.cli.mirror_targets import make_target
    from srcbuild.mirror.create import create_mirror
    from srcbuild.mirror.layout import is_url
    from srcbuild.mirror.pypi import PipSet
    from srcbuild.recipe import RecipeCatalog
    from srcbuild.sources.mirrors import parse_mirror_args
    from srcbuild.toolchain.data_files import load_facts
    from srcbuild.toolchain.providers import provider_order

    if is_url(directory):
        raise UsageError(
            f"mirror create {directory}: a mirror is made in a local directory",
            "make it in a directory, then serve that directory over HTTP with any static server",
        )
    environ = command_environ()
    paths = resolve_paths(work_dir, cache_dir)
    catalog = RecipeCatalog(paths)
    facts = load_facts(environ)
    prefer = provider_order(environ)
    backend_choice: Chosen[str | None] = precedence(
        Chosen(None, "default"), from_env(environ, "SRCBUILD_ENV_BACKEND", str), from_cli(env_backend, "--env-backend")
    )
    backend = backend_choice.value
    wheel_platforms = _wheel_platforms(platforms, environ)
    glibc = _target_glibc(platforms)
    if python is not None and not re.fullmatch(r"3\.\d+", python):
        raise UsageError(f"--python {python}: not a Python version", "give it as X.Y, e.g. --python 3.8")
    targets = []
    for name in recipes:
        recipe = catalog.load(name)
        wanted = packages or pinned_packages(recipe)
        choice = (portable, None if no_env else (backend or "conda"), skips)
        target = make_target(recipe, wanted, exts, choice, facts, prefer, environ, dry_run)
        torches = tuple(
            PipSet((f"torch=={v}",), recipe.toolchain.python, why=f"torch {v} for srcbuild ext --torch {v}", exact=True)
            for v in torch_versions
        )
        pip = tuple(replace(p, python=python or p.python) for p in (*target.pip, *torches))
        targets.append(
            replace(target, pip=pip, python=python or target.python, platforms=wheel_platforms, glibc=glibc)
        )
    if dry_run:
        return _dry_run(Path(directory), targets, as_json)
    rules = parse_mirror_args(list(mirrors), environ)
    nvidia = env_value(environ, "SRCBUILD_NVIDIA_MIRROR") or None
    stream = sys.stderr
    report = create_mirror(
        Path(directory),
        targets,
        rules,
        environ,
        nvidia_mirror=nvidia,
        stream=stream,
        log_path=paths.logs_dir / "mirror.log",
    )
    if as_json:
        print_json(report.to_json())
        return 0
    for line in report.not_mirrored:
        click.echo(textwrap.fill(f"not mirrored: {line}", 79, subsequent_indent="  "), err=True)
    click.echo(f"{report.root}: {human_size(report.total)} in all, created in {report.seconds:.1f} s")
    for kind, size in sorted(report.sizes.items()):
        click.echo(f"  {kind:<8} {human_size(size)}")
    click.echo(f"added {report.added_files} files ({human_size(report.added_bytes)}), kept {report.kept_files}")
    return 0


def _wheel_platforms(given: tuple[str, ...], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The platform tags of the wheels the other machine runs, newest first: each ``--platform``
    with the older manylinux tags it runs, else glibc 2.17 (the floor of portable builds, from the
    toolchain data) on this machine's architecture."""
    from srcbuild.host.platform import compatible_platforms, glibc_platform, host_machine
    from srcbuild.resolve.portable import sysroot_glibc

    for tag in given:
        if not re.fullmatch(r"[a-z0-9_]+", tag):
            raise UsageError(
                f"--platform {tag}: not a wheel platform tag",
                "give one as wheel names carry it, e.g. --platform manylinux2014_x86_64 or manylinux_2_28_x86_64",
            )
    named = given or (glibc_platform(sysroot_glibc(environ), host_machine()),)
    return tuple(dict.fromkeys(tag for each in named for tag in compatible_platforms(each)))


def _target_glibc(given: tuple[str, ...]) -> str | None:
    """The other machine's glibc as ``--platform`` names it (the newest a given tag stands for: that
    machine runs each), for the conda solve; None without one (the lockfile default, 2.28)."""
    from srcbuild.host.platform import platform_glibc

    found = [v for v in (platform_glibc(tag) for tag in given) if v is not None]
    return f"{max(found)[0]}.{max(found)[1]}" if found else None


def _dry_run(directory: Path, targets: list[Target], as_json: bool) -> int:
    from srcbuild.envs.solve import portable_virtual_packages
    from srcbuild.envs.spec import PLATFORM
    from srcbuild.mirror.gather import estimate
    from srcbuild.mirror.pypi import PipSet

    def conda_glibc(t: Target) -> str:
        """The glibc the conda solve is for: --platform's, else what a lockfile's solve assumes."""
        return t.glibc or portable_virtual_packages(t.env.platform if t.env else PLATFORM).get("__glibc", "")

    rows = [(target, estimate(target.needs)) for target in targets]
    if as_json:
        print_json(
            [
                {
                    "recipe": t.recipe,
                    "packages": list(t.packages),
                    "repos": [{"url": r.url, "tag": r.tag, "commit": r.commit, "why": r.why} for r in t.needs.repos],
                    "downloads": [{"url": d.url, "size": d.size, "why": d.why} for d in t.needs.downloads],
                    "patches": [p.name for p in t.needs.patches],
                    "index_wheels": [f.to_json() for f in t.needs.index],
                    "debian": [{"suite": r.suite, "packages": list(r.all_packages)} for r in t.needs.debian],
                    "toolchain_conda": [{"channel": c.channel, "specs": list(c.specs), "why": c.why}
                                        for c in t.needs.conda],
                    "pip": [{"requirements": list(p.requirements), "python": p.python or t.python, "why": p.why}
                            for p in t.pip],
                    "platforms": list(t.platforms),
                    "conda_glibc": conda_glibc(t),
                    "not_mirrored": list(t.needs.not_mirrored),
                    "estimate": {
                        "downloads": e.downloads,
                        "repos_at_most": e.repos,
                        "index_wheels": e.index,
                        "debian": e.debian,
                        "unknown": list(e.unknown),
                    },
                }
                for t, e in rows
            ]
        )
        return 0
    for target, est in rows:
        click.echo(f"{target.recipe} ({', '.join(target.packages)}) into {directory}:")
        for repo in target.needs.repos:
            click.echo(f"  git {repo.url} {repo.ref} with its submodules")
        last_why = ""
        for download in target.needs.downloads:
            if download.why != last_why:
                click.echo(f"  {download.why}:")
                last_why = download.why
            size = human_size(download.size) if download.size else "size unknown"
            click.echo(f"    {download.url.rsplit('/', 1)[-1]} ({size})")
        for route in target.needs.debian:
            click.echo(_fill(f"Debian {route.suite}: {' '.join(route.all_packages)}"))
        if target.needs.index:
            click.echo("  package index wheels:")
            for wheel in target.needs.index:
                size = human_size(wheel.size) if wheel.size else "size unknown"
                click.echo(f"    {wheel.requirement} ({size})")
        for piece in target.needs.conda:
            click.echo(_fill(f"{piece.why}: conda {piece.channel} {' '.join(piece.specs)}"))
        if target.pip or target.needs.index:
            click.echo(_fill(f"pip wheels for {target.for_target(PipSet(())).describe_target()} and older"))
        for pip_set in target.pip:
            click.echo(_fill(f"pip ({pip_set.why}): {' '.join(pip_set.requirements)}"))
        for patch in target.needs.patches:
            click.echo(f"  patch {patch.name}")
        for line in target.needs.not_mirrored:
            click.echo(_fill(f"not mirrored: {line}"))
        parts = [f"{human_size(est.downloads)} from NVIDIA"]
        if est.index:
            parts.append(f"{human_size(est.index)} of index wheels")
        if est.debian:
            parts.append(f"{human_size(est.debian)} of Debian packages")
        parts.append(f"at most {human_size(est.repos)} of git")
        unknown = len(est.unknown) + len(target.pip)  # conda pieces and pip sets are solved at creation
        click.echo(_fill(f"estimate: {' + '.join(parts)}" + (f"; not known before creation: {unknown}" if unknown
                                                             else "")))
    return 0


def _fill(text: str) -> str:
    return textwrap.fill(text, 79, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)


@mirror_group.command("verify")
@click.argument("directory", type=click.Path(file_okay=False))
@json_option
def verify_command(directory: str, as_json: bool) -> int:
    """Check every file of a mirror against its manifest (sha256 and size)."""
    from srcbuild.mirror.layout import base_of, is_url
    from srcbuild.mirror.manifest import read_manifest, verify

    if is_url(directory):
        raise UsageError(f"mirror verify {directory}: give the directory itself", "run it where the files are")
    manifest = read_manifest(base_of(directory))
    if manifest is None:
        raise NotFoundError(
            f"{directory}: no manifest.json, so not a mirror srcbuild made",
            f"srcbuild mirror create {directory} --recipe RECIPE",
        )
    problems = verify(Path(directory), manifest)
    if as_json:
        print_json({"ok": not problems, "files": len(manifest.files), "problems": [p.to_json() for p in problems]})
    else:
        for problem in problems:
            click.echo(f"{problem.path}: {problem.why}")
    if problems:
        raise CacheIntegrityError(
            f"{directory}: {len(problems)} of {len(manifest.files)} files differ from the manifest",
            f"run the srcbuild mirror create command that made {directory} again to fetch them anew",
        )
    if not as_json:
        click.echo(f"{directory}: {len(manifest.files)} files, {human_size(manifest.size)}, all match the manifest")
    return 0
