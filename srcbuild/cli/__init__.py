"""The command line: ``main(argv) -> int`` and the ``srcbuild`` command group.

Only this module catches ``SrcbuildError``: it prints the one-line message and the hint, and
returns the error's exit code (the table in ``srcbuild.errors``). With ``--json`` the failure is
also printed on stdout as ``{"ok": false, "error": ..., "hint": ..., "exit_code": ...}``.
``--debug`` (or ``SRCBUILD_DEBUG=1``) shows the traceback too.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from srcbuild import __version__
from srcbuild.cli.common import JSON_OUTPUT
from srcbuild.errors import FULL_ERRNOS, DiskFull, HostError, SrcbuildError, disk_full
from srcbuild.packages import PACKAGES
from srcbuild.proc import stop_on_signals
from srcbuild.usage import GROUP_HELP, MAX_WIDTH, OPTION_HELP, commands
from srcbuild.usage import shortened as _shortened

INTERNAL_ERROR = 70

# Each command lives in its own module, imported only when that command runs (so that
# `srcbuild doctor` does not pay for boto3, rattler or the build engine): srcbuild.usage holds the
# table, and `srcbuild --help` lists the commands from its summaries without importing any of them.


def _commands() -> dict[str, tuple[str, str]]:
    """Every command: ``srcbuild.usage.COMMANDS`` and a build command for each registered package
    (``srcbuild.cli.build.package_command`` makes each from its registry entry)."""
    return commands({name: spec.summary for name, spec in PACKAGES.items()})


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use; its help lists them from their summaries."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        commands = _commands()
        if cmd_name in commands and cmd_name not in self.commands:
            module_name, attr = commands[cmd_name][0].split(":")
            module = importlib.import_module(module_name)
            if cmd_name in PACKAGES:  # a package's build command, made from its registry entry
                self.add_command(module.package_command(cmd_name), cmd_name)
            else:
                self.add_command(getattr(module, attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands section of ``--help``, without importing a command that has a summary."""
        commands = _commands()
        names = [n for n in self.list_commands(ctx) if n in commands or n in self.commands]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in self.commands or name not in commands:
                command = self.get_command(ctx, name)
                if command is None or command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:
                rows.append((name, _shortened(commands[name][1], limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    help=GROUP_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": MAX_WIDTH},
)
@click.version_option(__version__, "--version", prog_name="srcbuild")
@click.option("--debug", is_flag=True, help=OPTION_HELP["--debug"])
@click.option("-q", "--quiet", is_flag=True, help=OPTION_HELP["-q, --quiet"])
@click.option("-v", "--verbose", is_flag=True, help=OPTION_HELP["-v, --verbose"])
@click.option("--no-color", is_flag=True, help=OPTION_HELP["--no-color"])
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help=OPTION_HELP["--config FILE"],
)
@click.pass_context
def cli(ctx: click.Context, debug: bool, quiet: bool, verbose: bool, no_color: bool, config_file: str | None) -> None:
    """The ``srcbuild`` group: applies the config file and reads the environment once (its help text
    is ``srcbuild.usage.GROUP_HELP``)."""
    from srcbuild.config import configured
    from srcbuild.console import configure

    ctx.with_resource(configured(config_file, os.environ))  # the environment is restored when the command ends
    environ = dict(os.environ)  # read once, here; commands take it from command_environ()
    ctx.ensure_object(dict)["environ"] = environ
    configure(quiet=quiet, verbose=verbose, no_color=no_color, environ=environ)


def _debug_requested(argv: Sequence[str]) -> bool:
    from srcbuild.precedence import env_value  # after a failure only: --help stays without it

    return "--debug" in argv or (env_value(os.environ, "SRCBUILD_DEBUG") or "0") != "0"


def _fail(
    message: str, hint: str | None, code: int, as_json: bool, details: dict[str, Any] | None = None
) -> int:
    """Report a failure: ``error:``/``hint:`` lines on stderr, and the JSON object with ``--json``."""
    import json

    # what the command already wrote to stdout (a --json result) goes out first: where both streams
    # share one pipe (`2>&1`) they then read in the order written, whatever stdout's buffering
    sys.stdout.flush()
    click.echo(f"error: {message}", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)
    if as_json and not JSON_OUTPUT.printed:  # a result already printed carries its own failure
        payload = {"ok": False, "error": message, "hint": hint, "exit_code": code, **(details or {})}
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
        sys.stdout.flush()
    return code


def interrupted(args: Sequence[str]) -> int:
    """Report a command interrupted before click ran it (``srcbuild.quick_hit``'s installer); its exit code."""
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    return _fail("interrupted", continue_hint(args), 130, as_json)


def continue_hint(args: Sequence[str]) -> str:
    """The hint of an interrupted command: the command line that continues it, as typed, with
    ``--resume`` added for a command that has it (a build); any other command (a toolchain
    install, a mirror, a download) continues by running again, keeping what it finished."""
    import shlex

    from srcbuild.cli.common import resume_command

    command: click.Command = cli
    ctx = click.Context(cli)
    for word in args:
        if not isinstance(command, click.Group):
            break
        if word.startswith("-"):
            continue
        found = command.get_command(ctx, word)
        if found is None:
            break
        command = found
    if any(param.name == "resume" for param in command.params):
        return f"continue with: {resume_command(list(args))}"
    return f"continue with: {shlex.join(['srcbuild', *(a for a in args if a != '--json')])}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run srcbuild with ``argv`` (without the program name); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    JSON_OUTPUT.printed = False
    console = sys.modules.get("srcbuild.console")  # rich is imported by the commands that print through it
    if console is not None:
        console.reset()
    try:
        with stop_on_signals():  # SIGTERM and SIGHUP stop a build as Ctrl-C does
            result = cli.main(args=args, prog_name="srcbuild", standalone_mode=False, obj={"argv": args})
    except SrcbuildError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        hint = exc.hint
        if exc.exit_code == 130 and "srcbuild " not in (hint or ""):  # an interrupt names what continues it
            hint = continue_hint(args)
        return _fail(exc.message, hint, exc.exit_code, as_json, exc.details)
    except (click.exceptions.Abort, KeyboardInterrupt):
        return _fail("interrupted", continue_hint(args), 130, as_json)
    except click.ClickException as exc:
        if not as_json:
            exc.show()
            return exc.exit_code
        ctx = getattr(exc, "ctx", None)
        return _fail(exc.format_message(), f"{ctx.command_path if ctx else 'srcbuild'} --help", exc.exit_code, True)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except OSError as exc:  # a write no step turned into its own message: a full disk is still named
        no_temp = no_temp_dir(exc)
        if no_temp is not None:
            return _fail(no_temp.message, no_temp.hint, no_temp.exit_code, as_json)
        full = disk_full(exc, Path(exc.filename)) if isinstance(exc.filename, str) else None
        if full is None and exc.errno in FULL_ERRNOS:
            full = DiskFull(f"a filesystem is full ({exc.strerror})", "free space (`df -h` shows where), then retry")
        if full is not None:
            return _fail(full.message, full.hint, full.exit_code, as_json)
        return _internal_error(exc, debug, as_json)
    except Exception as exc:
        return _internal_error(exc, debug, as_json)
    return result if isinstance(result, int) else 0


def no_temp_dir(exc: OSError) -> HostError | None:
    """Exit 4 naming TMPDIR for a temporary directory that cannot be made: none of tempfile's
    candidates is writable ("No usable temporary directory"), or the one it chose is gone or
    read-only."""
    import errno
    import tempfile

    setting = os.environ.get("TMPDIR")
    named = f"TMPDIR={setting}" if setting else "TMPDIR is not set"
    hint = "point TMPDIR at a directory you can write: mkdir -p ~/tmp && export TMPDIR=~/tmp"
    if isinstance(exc, FileNotFoundError) and "No usable temporary directory" in str(exc.strerror):
        return HostError(
            f"no writable temporary directory ({named}; /tmp, /var/tmp and the current directory failed too)", hint
        )
    chosen = tempfile.tempdir
    if (
        chosen
        and isinstance(exc.filename, str)
        and exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR)
        and Path(exc.filename).parent == Path(chosen)
    ):
        return HostError(f"cannot create a temporary directory in {chosen} ({named}): {exc.strerror}", hint)
    return None


def _internal_error(exc: Exception, debug: bool, as_json: bool) -> int:
    """Report an exception no step turned into its own message: exit 70, the traceback with --debug."""
    if debug:
        import traceback

        traceback.print_exc()
    return _fail(
        f"internal error: {type(exc).__name__}: {exc}",
        "this is a bug in srcbuild; rerun with --debug and report the traceback",
        INTERNAL_ERROR,
        as_json,
    )


def entrypoint() -> None:
    code = main()
    if "rattler" in sys.modules:
        # py-rattler's Rust runtime keeps native threads that can abort the interpreter while it
        # finalizes ("PyGILState_Release: thread state ... must be current when releasing",
        # SIGABRT after the work is done). Everything is written and closed by now: leave directly.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    # The interpreter's last collection walks every object a build made (its modules, dataclasses,
    # the knowledge base): 40-60 ms of garbage collection after the work is done. Frozen objects
    # are left out of it; the exit itself is unchanged (atexit handlers, threads, flushed streams).
    gc.freeze()
    sys.exit(code)
