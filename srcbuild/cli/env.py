"""``srcbuild env show|create|rm`` and ``srcbuild lock``: a recipe's build environment.

``env show`` prints the spec (what goes in and why), its hash, the backend that would make it and
exactly what that backend would do. ``env create`` makes (or reuses) it. ``env rm`` deletes it.
``lock`` solves the spec for linux-64 and writes ``recipes/R.conda-lock.yml`` next to the recipe.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from srcbuild.cli.common import F, command_environ, json_option, path_options, print_json, resolve_paths
from srcbuild.cli.mirror_dir import mirror_dir_option
from srcbuild.console import echo_text, make_console, print_lines, show_table, table
from srcbuild.envs import (
    BACKEND_NAMES,
    EnvBackend,
    EnvSpec,
    EnvStore,
    choose_backend,
    default_lockfile,
    env_prefix,
    env_prefixes,
    env_spec_for,
    lockfile_path,
)
from srcbuild.envs.backends.base import CommandIO
from srcbuild.envs.lockfile import lockfile_from
from srcbuild.envs.solve import solve_spec
from srcbuild.errors import HostError, UsageError
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.recipe.load import display_path


def channel_options(func: F) -> F:
    func = click.option(
        "--channel",
        "channels",
        multiple=True,
        metavar="NAME|URL",
        help="Use these channels instead of the recipe's (repeatable, highest priority first).",
    )(func)
    func = click.option(
        "--channel-mirror",
        "mirrors",
        multiple=True,
        metavar="NAME=URL",
        help="Fetch channel NAME from URL, e.g. conda-forge=https://mirror.example.edu/conda-forge "
        "(repeatable) [env SRCBUILD_CHANNEL_MIRRORS].",
    )(func)
    func = click.option(
        "--channel-alias",
        metavar="URL",
        default=None,
        help="Fetch named channels from URL/NAME [env SRCBUILD_CHANNEL_ALIAS].",
    )(func)
    return func


def recipe_option(func: F) -> F:
    return click.option("--recipe", "recipe_name", required=True, metavar="R", help="Recipe name or file.")(func)


def _load(recipe_name: str, paths: Paths) -> Recipe:
    return RecipeCatalog(paths).load(recipe_name)


def _spec(recipe: Recipe, channels: tuple[str, ...], alias: str | None, mirrors: tuple[str, ...]) -> EnvSpec:
    return env_spec_for(
        recipe,
        channels_override=channels or None,
        channel_alias=alias,
        channel_mirrors=mirrors,
        environ=command_environ(),
    )


@click.group("env")
def env_group() -> None:
    """Show, create and remove a recipe's build environment; make a Python to run wheels."""


@env_group.command("show")
@recipe_option
@click.option("--env-backend", type=click.Choice(BACKEND_NAMES), default=None, help="Backend to describe.")
@channel_options
@path_options
@json_option
def show_env(
    recipe_name: str,
    env_backend: str | None,
    channel_alias: str | None,
    mirrors: tuple[str, ...],
    channels: tuple[str, ...],
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """The environment recipe R needs: packages and where each comes from, hash, backend, plan."""
    paths = resolve_paths(work_dir, cache_dir)
    recipe = _load(recipe_name, paths)
    spec = _spec(recipe, channels, channel_alias, mirrors)
    lockfile = default_lockfile(recipe)
    backend: EnvBackend | None = None
    unavailable: HostError | None = None
    try:
        backend = choose_backend(env_backend, spec, command_environ())
    except HostError as exc:  # still worth showing the spec: say what is missing instead
        unavailable = exc
    prefix = env_prefix(spec, paths.envs_dir, backend)
    steps = backend.describe(spec, prefix, lockfile) if backend is not None else []
    exists = (prefix / ".srcbuild-env.json").is_file()
    if as_json:
        print_json(
            {
                "recipe": recipe.name,
                "spec": spec.to_json(),
                "backend": backend.name if backend is not None else None,
                "backend_error": unavailable.message if unavailable is not None else None,
                "prefix": str(prefix),
                "exists": exists,
                "lockfile": str(lockfile) if lockfile else None,
                "steps": steps,
            }
        )
        return 0
    console = make_console()
    print_lines(
        [
            f"# build environment of {recipe.name} (torch {recipe.torch.tag}, Python {spec.python})",
            f"spec hash: {spec.hash()}",
            f"channels:  {', '.join(spec.channels)}",
            *(f"           {line}" for line in spec.routing.describe()),
        ],
        console,
    )
    origins = [
        (item, "recipe [toolchain] python" if item == spec.python_spec else spec.origin(item))
        for item in spec.conda_specs
    ]
    show_table(table("conda packages", ("package", "from"), origins), console)
    if spec.pip:
        pip_rows = ((item, spec.origin(item)) for item in spec.pip)
        show_table(table("pip packages", ("package", "from"), pip_rows), console)
    lines = [f"lockfile:  {display_path(lockfile) if lockfile else 'none (the packages are solved at creation)'}"]
    if backend is not None:
        lines.append(f"backend:   {backend.name}")
    elif unavailable is not None:
        lines.append(f"backend:   none available here: {unavailable.message} ({unavailable.hint})")
    lines.append(f"prefix:    {prefix} ({'exists' if exists else 'not created yet'})")
    lines.extend(f"  - {step}" for step in steps)
    print_lines(lines, console)
    return 0


@env_group.command("create")
@recipe_option
@click.option(
    "--env-backend",
    type=click.Choice(BACKEND_NAMES),
    default=None,
    help="conda, mamba, micromamba, rattler (embedded) or venv [env SRCBUILD_ENV_BACKEND; default: automatic].",
)
@click.option("--ignore-lockfile", is_flag=True, help="Solve even when recipes/R.conda-lock.yml exists.")
@channel_options
@mirror_dir_option(lambda kw: ())
@path_options
@json_option
def create_env(
    recipe_name: str,
    env_backend: str | None,
    ignore_lockfile: bool,
    channel_alias: str | None,
    mirrors: tuple[str, ...],
    channels: tuple[str, ...],
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Create recipe R's build environment (or reuse it unchanged); print its prefix last."""
    paths = resolve_paths(work_dir, cache_dir)
    recipe = _load(recipe_name, paths)
    spec = _spec(recipe, channels, channel_alias, mirrors)
    backend = choose_backend(env_backend, spec, command_environ())
    lockfile = None if ignore_lockfile else default_lockfile(recipe)
    log_path = paths.logs_dir / f"env-{spec.key}.log"
    env = backend.ensure(spec, paths.envs_dir, lockfile, log_path, CommandIO(command_environ(), sys.stderr))
    if as_json:
        print_json({"recipe": recipe.name, **env.to_json(), "lockfile": str(lockfile) if lockfile else None})
        return 0
    if env.reused:
        click.echo(f"environment unchanged (spec {spec.key}), reused in {env.seconds:.3f} s", err=True)
    else:
        source = f"from {display_path(lockfile)}" if lockfile else "solved"
        click.echo(f"environment created with {backend.name} ({source}) in {env.seconds:.1f} s", err=True)
    click.echo(str(env.prefix))
    return 0


@env_group.command("rm")
@click.option("--recipe", "recipe_name", default=None, metavar="R", help="Remove recipe R's environment.")
@click.option("--all", "remove_all", is_flag=True, help="Remove every environment and the package caches.")
@channel_options
@path_options
def remove_env(
    recipe_name: str | None,
    remove_all: bool,
    channel_alias: str | None,
    mirrors: tuple[str, ...],
    channels: tuple[str, ...],
    work_dir: str | None,
    cache_dir: str | None,
) -> int:
    """Remove recipe R's build environment, or all of them with --all.

    Takes the channel options of `env create` too; only --channel changes which environment it is.
    """
    if bool(recipe_name) == remove_all:
        raise UsageError("give either --recipe R or --all", "srcbuild env rm --recipe kepler-cu92")
    paths = resolve_paths(work_dir, cache_dir)
    store = EnvStore(paths.envs_dir)
    if remove_all:
        removed = store.remove_all()
        click.echo(f"removed {len(removed)} environment(s) and the package caches from {paths.envs_dir}")
        return 0
    assert recipe_name is not None
    recipe = _load(recipe_name, paths)
    spec = _spec(recipe, channels, None, ())
    removed_any = False
    for prefix in env_prefixes(spec, paths.envs_dir):  # made by a conda backend or as a venv
        if store.remove(prefix.name):
            click.echo(f"removed {prefix}")
            removed_any = True
    if not removed_any:
        click.echo(f"no environment for {recipe.name} at {env_prefix(spec, paths.envs_dir, None)}")
    return 0


@click.command("lock")
@recipe_option
@click.option(
    "--output", type=click.Path(dir_okay=False), default=None, help="Write here instead of next to the recipe."
)
@channel_options
@path_options
def lock_env(
    recipe_name: str,
    output: str | None,
    channel_alias: str | None,
    mirrors: tuple[str, ...],
    channels: tuple[str, ...],
    work_dir: str | None,
    cache_dir: str | None,
) -> int:
    """Solve recipe R's environment for linux-64 and write recipes/R.conda-lock.yml (conda-lock v1)."""
    paths = resolve_paths(work_dir, cache_dir)
    recipe = _load(recipe_name, paths)
    if recipe.path is None:
        raise UsageError(f"recipe {recipe.name} has no file to write a lockfile next to", "pass --output PATH")
    spec = _spec(recipe, channels, channel_alias, mirrors)
    started = time.monotonic()
    log_path = paths.logs_dir / f"lock-{spec.key}.log"
    packages = solve_spec(spec, EnvStore(paths.envs_dir).repodata_cache, log_path, for_this_host=False)
    target = Path(output) if output else lockfile_path(recipe.path, recipe.name)
    lock = lockfile_from(packages, spec.hash(), spec.channels, [recipe.path.name])
    lock.write(target)
    took = time.monotonic() - started
    click.echo(f"locked {len(packages)} packages for linux-64 in {took:.2f} s (spec {spec.key})", err=True)
    if spec.pip:
        click.echo(f"note: pip packages are installed by requirement, not locked: {' '.join(spec.pip)}", err=True)
    click.echo(display_path(target))
    return 0


@env_group.command("runtime")
@click.option("--python", "python", required=True, metavar="X.Y", help="The Python version, e.g. 3.7.")
@click.option("--into", "into", required=True, metavar="DIR", help="A new directory for it.")
@click.option(
    "--backend",
    type=click.Choice(["venv", "rattler"]),
    default=None,
    help="venv of the system's pythonX.Y, or conda-forge's Python through rattler (default: venv when there is one).",
)
@path_options
@json_option
def runtime_env(
    python: str, into: str, backend: str | None, work_dir: str | None, cache_dir: str | None, as_json: bool
) -> int:
    """Make a Python of any version at DIR for running wheels (not for building)."""
    from srcbuild.envs.runtime import make_runtime

    paths = resolve_paths(work_dir, cache_dir)
    target = Path(into).expanduser().absolute()
    made = make_runtime(python, target, paths.work_dir, command_environ(), backend)
    if as_json:
        print_json(made.to_json())
        return 0
    quoted = shlex.quote(str(made.prefix))
    echo_text(
        f"made Python {made.version} at {made.prefix} ({made.route})\n"
        f"use it: {shlex.quote(str(made.python))} -m pip install PACKAGES\n"
        f"or: srcbuild install torch --recipe R --into {quoted}\n"
    )
    return 0
