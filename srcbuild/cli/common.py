"""Pieces every command shares: path options, the JSON switch, result printing, and the exact
command line a hint tells the user to run again."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from srcbuild.patterns import LazyPattern

if TYPE_CHECKING:  # platformdirs is loaded by the commands that look for a path, not by --help
    from srcbuild.cache.remotes import CacheRemote
    from srcbuild.paths import Paths

F = TypeVar("F", bound=Callable[..., Any])


def path_options(func: F) -> F:
    """``--work-dir`` and ``--cache-dir`` (also ``SRCBUILD_WORK_DIR`` / ``SRCBUILD_CACHE_DIR``)."""
    func = click.option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Wheel cache directory [env SRCBUILD_CACHE_DIR; default: cache/ of a checkout, else the user cache].",
    )(func)
    func = click.option(
        "--work-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Where sources, build trees, environments and logs go [env SRCBUILD_WORK_DIR].",
    )(func)
    return func


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(func)


def command_environ() -> dict[str, str]:
    """The environment this command runs with: read once by ``srcbuild.cli.cli`` (after the config
    file is applied) and passed down from here; nothing below the command line reads ``os.environ``."""
    ctx = click.get_current_context()
    environ = ctx.find_root().ensure_object(dict).get("environ")
    assert environ is not None, "the srcbuild group reads the environment before any command runs"
    return dict(environ)


def resolve_paths(work_dir: str | None = None, cache_dir: str | None = None) -> Paths:
    from srcbuild.paths import Paths

    return Paths.resolve(work_dir=work_dir, cache_dir=cache_dir, environ=command_environ())


class _JsonOutput:
    """Whether this run already printed its JSON document (a failure after it adds none)."""

    printed = False


JSON_OUTPUT = _JsonOutput()


def print_json(data: Any) -> None:
    """``data`` as JSON: an object indented, a list one item a line (a listing of 10,000 entries is
    written by the C encoder, about five times faster than indenting each item)."""
    import json

    if isinstance(data, list) and data:
        items = (json.dumps(item, default=str) for item in data)
        sys.stdout.write("[\n  " + ",\n  ".join(items) + "\n]\n")
    else:
        json.dump(data, sys.stdout, indent=2, sort_keys=False, default=str)
        sys.stdout.write("\n")
    JSON_OUTPUT.printed = True


def invocation() -> list[str]:
    """The arguments of this srcbuild run as the user typed them (``main`` keeps them)."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return list(obj.get("argv", [])) if isinstance(obj, dict) else []


def resume_command(argv: list[str], resume: bool = True) -> str:
    """``argv`` as a pasteable command that continues the build: every option kept as given
    (the recipe as a name or a path, --mirror, --env, --work-dir, --cache-dir ...), ``--resume``
    added (or, with ``resume=False``, taken out)."""
    args = [a for a in argv if a not in ("--json", "--resume")]
    return shlex.join(["srcbuild", *args, *(["--resume"] if resume else [])])


_GENERIC_RESUME = LazyPattern(r"srcbuild [a-z][a-z0-9_-]* --recipe \S+ --resume")


def exact_hint(hint: str | None, command: str, fresh: str | None = None) -> str | None:
    """A build hint with its "continue with"/"rerun with --resume" made the exact ``command``
    (and "the same command without --resume" the exact ``fresh`` one)."""
    if not hint:
        return hint
    hint = _GENERIC_RESUME.sub(lambda _: command, hint)
    if fresh:
        hint = hint.replace("run the same command without --resume", f"run it without --resume: {fresh}")
    return hint.replace("rerun with --resume to continue from this step", f"continue with: {command}")


def complete_recipe(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion for ``--recipe``: catalog names (and files, when it looks like a path)."""
    from click.shell_completion import CompletionItem

    from srcbuild.paths import Paths
    from srcbuild.recipe.catalog import RecipeCatalog, is_path_argument

    if incomplete and is_path_argument(incomplete):
        return [CompletionItem(incomplete, type="file")]
    # shell completion runs before the group reads the environment: it is an entry point of its own
    names = RecipeCatalog(Paths.resolve(environ=os.environ)).names()
    return [CompletionItem(name) for name in sorted(names) if name.startswith(incomplete)]


def remote_options(func: F) -> F:
    """``--remote`` (repeatable; also SRCBUILD_REMOTES) and ``--s3-endpoint-url``."""
    func = click.option(
        "--s3-endpoint-url",
        default=None,
        help="S3 endpoint for s3:// remotes [env SRCBUILD_S3_ENDPOINT_URL, AWS_ENDPOINT_URL].",
    )(func)
    func = click.option(
        "--remote",
        "remotes",
        multiple=True,
        help="A shared cache: a directory, file://, s3://bucket/prefix or http://host:port/ "
        "(repeatable) [env SRCBUILD_REMOTES].",
    )(func)
    return func


def trust_option(func: F) -> F:
    """``--trust-unsigned``: accept remote entries no trusted signer vouches for."""
    return click.option(
        "--trust-unsigned",
        is_flag=True,
        help="Accept remote entries that no trusted signer signed (the sha256 is still checked).",
    )(func)


class PackageChoice(click.ParamType):
    """A registered package's name (``srcbuild.packages.PACKAGES``, asked when the value is
    converted, so a package added to the registry is a choice at once), or one of ``extra``."""

    name = "package"

    def __init__(self, extra: tuple[str, ...] = ()) -> None:
        self.extra = extra

    def choices(self) -> tuple[str, ...]:
        from srcbuild.packages import PACKAGES

        return (*PACKAGES, *self.extra)

    def get_metavar(self, param: click.Parameter, *args: Any, **kwargs: Any) -> str:
        return "[" + "|".join(self.choices()) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value in self.choices():
            return str(value)
        self.fail(f"{value!r} is not one of {', '.join(map(repr, self.choices()))}.", param, ctx)


def open_remotes(urls: Sequence[str], s3_endpoint_url: str | None, required: bool = False) -> list[CacheRemote]:
    """The cache remotes ``urls`` (and ``SRCBUILD_REMOTES``) name, opened with the S3 options; with
    ``required``, a UsageError when there is none. Here, not in the ``cache`` command's module:
    ``install`` asks it on every hit and need not import that command."""
    from srcbuild.cache.remotes import RemoteOptions, open_remote, parse_remotes
    from srcbuild.errors import UsageError

    resolved = parse_remotes(list(urls), command_environ())
    if required and not resolved:
        raise UsageError(
            "no remote given", "pass --remote DIR|s3://bucket/prefix|http://host:port/ or set SRCBUILD_REMOTES"
        )
    options = RemoteOptions.resolve(s3_endpoint_url, environ=command_environ())
    return [open_remote(url, options) for url in resolved]
