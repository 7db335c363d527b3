"""``--mirror-dir DIR`` (``SRCBUILD_MIRROR_DIR``, config ``mirror_dir``): one option for every
command that downloads, making the mirror directory the only place it fetches from.

The option reads the mirror's manifest once, checks every file of a mirror directory against it
(sha256; a symbolic link out of the mirror and a git file it does not list are refused, exit 7;
each file is hashed once per file identity), refuses at once when the mirror was not made for the
command's recipe and package (naming the ``srcbuild mirror create`` command that adds it), and
turns the directory into the settings the rest of srcbuild reads (``mirror.layout``); the
toolchain providers whose files the mirror holds are tried first (``SRCBUILD_TOOLCHAIN_PROVIDERS``,
unless set), so a mirror made with the Debian route first is used for it on the other machine. A piece
found missing later (``MirrorMissing``) gets the same exact command as its hint.
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from srcbuild.cli.common import F, command_environ
from srcbuild.errors import MirrorMissing, SourceMismatch
from srcbuild.mirror.layout import PATCHES, base_of, is_url, mirror_dir_settings
from srcbuild.offline import DIR_VAR
from srcbuild.precedence import Chosen, env_value, from_cli, from_env, precedence

if TYPE_CHECKING:
    from srcbuild.mirror.manifest import Manifest

PATCHES_VAR = "SRCBUILD_PATCHES_PATH"
MIRROR_CHECKED = "mirror-files-checked.json"  # in the work dir: srcbuild.files.VerifiedFiles records


def create_command(base: str, recipe: str | None, packages: tuple[str, ...]) -> str:
    argv = ["srcbuild", "mirror", "create", base.rstrip("/") if not is_url(base) else base]
    argv += ["--recipe", recipe or "RECIPE"]
    for package in packages:
        argv += ["--package", package]
    return shlex.join(argv)


def with_details(add: str, details: dict[str, Any]) -> str:
    """The ``mirror create`` command with what the missing piece needs: a variable set before it
    (``SRCBUILD_TOOLCHAIN_PROVIDERS=debian``) and options after it (``--env-backend venv``)."""
    options = [str(o) for o in details.pop("create_options", [])]
    prefix = str(details.pop("create_prefix", ""))
    command = " ".join([add, *(shlex.quote(o) for o in options)])
    return f"{prefix} {command}" if prefix else command


def mirror_dir_choice(given: str | None, environ: dict[str, str]) -> Chosen[str | None]:
    """``--mirror-dir`` > ``SRCBUILD_MIRROR_DIR`` (or the config file's ``mirror_dir``), with its origin."""
    return precedence(Chosen(None, "default"), from_env(environ, DIR_VAR, str), from_cli(given or None, "--mirror-dir"))


def said(chosen: Chosen[str | None]) -> str:
    """The mirror as a message names it: the option as given, or the value and where it was set."""
    if chosen.origin.startswith("command line"):
        return f"--mirror-dir {chosen.value}"
    return f"the mirror directory {chosen.value} ({chosen.origin})"


def use_mirror_dir(location: str, recipe_arg: str | None, packages: tuple[str, ...], named: str = "") -> str:
    """Check the mirror serves the recipe's packages and set the command's environment to it;
    return the ``mirror create`` command that adds what it lacks. ``named``: how messages name it."""
    named = named or f"--mirror-dir {location}"
    from srcbuild.cli.common import resolve_paths
    from srcbuild.mirror.manifest import read_manifest
    from srcbuild.recipe import RecipeCatalog

    root = click.get_current_context().find_root().ensure_object(dict)
    environ: dict[str, str] = root["environ"]
    base = base_of(location)
    name = RecipeCatalog(resolve_paths()).load(recipe_arg).name if recipe_arg else None
    add = create_command(base, recipe_arg, packages)
    manifest = read_manifest(base)
    if manifest is None:
        raise MirrorMissing(f"{named}: no manifest.json there", f"make it: {add}")
    lacking = [p for p in packages if name is not None and not manifest.serves(name, p)]
    if lacking:
        what = " and ".join(lacking)
        raise MirrorMissing(f"the mirror {base} holds nothing for {what} of recipe {name}", f"add it: {add}")
    if not is_url(base):
        check_files(Path(base), manifest, resolve_paths().work_dir / MIRROR_CHECKED, named)
    environ.update(mirror_dir_settings(location, manifest.git_hosts))
    from srcbuild.toolchain.providers import ORDER_VAR

    if manifest.providers and not env_value(environ, ORDER_VAR):  # the providers whose files it holds, first
        environ[ORDER_VAR] = ",".join(manifest.providers)
    if not is_url(base):
        environ[PATCHES_VAR] = os.pathsep.join(
            p for p in (str(Path(base) / PATCHES), env_value(environ, PATCHES_VAR) or "") if p
        )
    return add


def check_files(root: Path, manifest: Manifest, record: Path, named: str) -> None:
    """Every file of a mirror directory against its manifest before anything is taken from it
    (``mirror.manifest.verify``): a file that differs, a symbolic link out of the mirror or a git
    file the manifest does not list is refused (exit 7). A file already found to match is not
    hashed again while its identity is unchanged (``srcbuild.files.VerifiedFiles``, records in ``record``)."""
    from srcbuild.files import VerifiedFiles
    from srcbuild.mirror.manifest import verify

    checked = VerifiedFiles(record)
    problems = verify(root, manifest, checked)
    checked.save()
    if problems:
        first = problems[0]
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise SourceMismatch(
            f"{named}: {first.path} differs from the mirror's manifest ({first.why}){more}; "
            "nothing was taken from it",
            f"the mirror was changed after it was made: `srcbuild mirror verify {shlex.quote(str(root))}` lists "
            "every difference; make it again with srcbuild mirror create on a connected machine",
            {"problems": [p.to_json() for p in problems]},
        )


def mirror_dir_option(packages: Callable[[dict[str, Any]], tuple[str, ...]]) -> Callable[[F], F]:
    """Add ``--mirror-dir`` to a command; ``packages(kw)`` says which packages of the recipe it needs."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, mirror_dir: str | None = None, **kw: Any) -> Any:
            chosen = mirror_dir_choice(mirror_dir, command_environ())
            if not chosen.value:
                return func(*args, **kw)
            recipe = kw.get("recipe") or kw.get("recipe_name")
            add = use_mirror_dir(chosen.value, recipe, packages(kw), said(chosen))
            try:
                return func(*args, **kw)
            except MirrorMissing as exc:
                exc.hint = f"add it on a connected machine: {with_details(add, exc.details)}"
                raise

        option = click.option(
            "--mirror-dir",
            default=None,
            help="Take every download from this mirror (a directory or http:// URL made by "
            "`srcbuild mirror create`) and nothing from the network [env SRCBUILD_MIRROR_DIR].",
        )
        return option(wrapper)  # type: ignore[return-value]

    return decorate
