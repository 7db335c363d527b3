"""``srcbuild install PACKAGE --recipe R``: install the recipe's cached wheel of a package
(``srcbuild.packages``: torch, torchvision, torchaudio) or of an extension into an environment."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from srcbuild import proc
from srcbuild.cache.pip_target import start_pip, target_python
from srcbuild.cli.common import (
    command_environ,
    json_option,
    open_remotes,
    path_options,
    print_json,
    remote_options,
    resolve_paths,
    trust_option,
)
from srcbuild.console import echo_text
from srcbuild.errors import UsageError
from srcbuild.packages import PACKAGES

if TYPE_CHECKING:
    from srcbuild.cache.install import InstallResult
    from srcbuild.recipe import Recipe


@click.command("install")
@click.argument("package", metavar="PACKAGE|EXTENSION")
@click.option("--recipe", "recipe_name", required=True, help="Recipe name or file.")
@click.option("--into", default=None, help="Environment prefix to install into [default: the active venv/conda env].")
@click.option("--python", "python", default=None, help="Interpreter to install for (instead of --into).")
@click.option(
    "--create",
    is_flag=True,
    help="Make --into first when it holds no Python: the recipe's Python (srcbuild env runtime).",
)
@click.option("--dry-run", is_flag=True, help="Find and check the wheel, but do not install it.")
@click.option("--no-deps", is_flag=True, help="Install the wheel alone, not the packages it depends on.")
@click.option("--index-url", default=None, help="Index pip resolves the dependencies from [default: pip's own].")
@click.option("--extra-index-url", "extra_index_urls", multiple=True, help="Another index for the dependencies.")
@click.option(
    "--allow-modified", is_flag=True, help="Also install a wheel built from sources with local modifications."
)
@trust_option
@remote_options
@path_options
@json_option
def install_cmd(
    package: str,
    recipe_name: str,
    into: str | None,
    python: str | None,
    create: bool,
    dry_run: bool,
    no_deps: bool,
    index_url: str | None,
    extra_index_urls: tuple[str, ...],
    allow_modified: bool,
    trust_unsigned: bool,
    remotes: tuple[str, ...],
    s3_endpoint_url: str | None,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Install PACKAGE built with a recipe from the cache or a remote, after checking it fits this machine.

    PACKAGE is torch, torchvision, torchaudio or an extension; an extension (srcbuild ext) is the
    one built against the torch the target environment has."""
    # a hit's pip loads itself from now on, while the recipe, the key and the lookup are decided
    pip = _early_pip(package, into, python, dry_run)
    try:
        from srcbuild.cache.install import PipOptions, install
        from srcbuild.cache.signing import TrustPolicy
        from srcbuild.cache.store import WheelCache
        from srcbuild.recipe import RecipeCatalog

        paths = resolve_paths(work_dir, cache_dir)
        recipe = RecipeCatalog(paths).load(recipe_name)
        if create:
            if not into:
                raise UsageError("--create needs --into DIR", "e.g. --into ~/venvs/old-gpu --create")
            into = str(Path(into).expanduser().absolute())
            if not (Path(into) / "bin" / "python").exists():
                if package in PACKAGES:  # a miss is said before a Python is made for nothing
                    from srcbuild.cache.install import peek_wheel

                    peek_wheel(
                        WheelCache(paths.cache_dir), recipe, package, open_remotes(remotes, s3_endpoint_url),
                        _fingerprint(recipe, package),
                        TrustPolicy.resolve(trust_unsigned, environ=command_environ()),
                        allow_modified=allow_modified, environ=command_environ(),
                    )
                from srcbuild.envs.runtime import make_runtime

                made = make_runtime(recipe.toolchain.python, Path(into), paths.work_dir, command_environ())
                if not as_json:
                    echo_text(f"made Python {made.version} at {made.prefix} ({made.route})\n", stderr=True)
        cache = WheelCache(paths.cache_dir)
        if package not in PACKAGES:
            from srcbuild.ext.install import check_name, install_ext

            done = install_ext(
                cache, recipe, check_name(package),
                target_python(into, python, command_environ(), version=recipe.toolchain.python),
                command_environ(), echo=None if as_json else sys.stderr, dry_run=dry_run, no_deps=no_deps,
                remotes=open_remotes(remotes, s3_endpoint_url),
                trust=TrustPolicy.resolve(trust_unsigned, environ=command_environ()),
            )
            if as_json:
                print_json(done.to_json())
            else:
                verb = "installed" if done.installed else "would install"
                origin = "the local cache" if done.origin == "local" else done.origin
                echo_text(f"{verb} {done.wheel.name} (built against torch {done.torch}) from {origin} into "
                          f"{done.python}\n")
            return 0
        target = target_python(into, python, command_environ(), version=recipe.toolchain.python)
        early = pip if pip is not None and pip.argv[0] == str(target) else None  # not one --create moved
        result = install(
            cache,
            recipe,
            package,
            open_remotes(remotes, s3_endpoint_url),
            target,
            lambda: _fingerprint(recipe, package),
            echo=None if as_json else sys.stderr,
            dry_run=dry_run,
            trust=TrustPolicy.resolve(trust_unsigned, environ=command_environ()),
            options=PipOptions(no_deps, index_url, extra_index_urls, allow_modified),
            environ=command_environ(),
            pip=early,
        )
        if as_json:
            print_json(result.to_json())
            return 0
        said = "".join(finding.render() + "\n" for finding in result.findings)
        shown = echo_text(said, stderr=True) if said else ""
        origin = "the local cache" if result.origin == "local" else result.origin
        verb = "installed" if result.installed else "would install"
        line = f"{verb} {result.wheel.name} from {origin} into {result.python}\n"
        echo_text(line)
        if result.installed and result.origin == "local" and not create:
            _remember(result, into, said, shown, line)
        return 0
    finally:
        if pip is not None:
            pip.cancel()  # a miss, a misfit or an error; after pip ran, a no-op


def _early_pip(package: str, into: str | None, python: str | None, dry_run: bool) -> proc.Waiting | None:
    """The target's pip, started (``pip_target``) when an install of a package (not an extension)
    will need it (no uv: ``cache.installer``) and the target interpreter is already there; None
    otherwise (install starts or refuses it later)."""
    if dry_run or package not in PACKAGES:
        return None
    from srcbuild.cache.installer import uv_binary

    try:
        if uv_binary(command_environ()) is not None:
            return None  # uv installs the wheel: it starts in milliseconds, nothing to start early
        return start_pip(target_python(into, python, command_environ()))
    except UsageError:  # no interpreter yet (--create makes it), or none: said later, with the recipe's hint
        return None


def _remember(result: InstallResult, into: str | None, said: str, shown: str, line: str) -> None:
    """A record of this hit (``srcbuild.quick_hit``), when what it read was traced and uv installed
    it; ``said`` the findings printed on stderr, ``shown`` as they were written there."""
    import os

    from srcbuild.quick_hit import remember
    from srcbuild.read_trace import current

    trace = current()
    if trace is None or result.uv is None or (into is not None and str(result.python) in said):
        return
    argv = click.get_current_context().find_root().ensure_object(dict)["argv"]
    remember(
        argv, os.environ, trace, into=into, python=str(result.python), answered=result.driver_answered,
        wheel=str(result.wheel), wheel_state=result.wheel_state, uv=result.uv, said=said, shown=shown, done=line,
    )


def _fingerprint(recipe: Recipe, package: str) -> str:
    """The key ``package`` for ``recipe`` is cached under (imported when asked: ``install`` asks
    while the target interpreter answers)."""
    from srcbuild.resolve.request import request_fingerprint

    return request_fingerprint(recipe, package, command_environ())
