"""The command line: ``main(argv) -> int`` and the ``srcbuild`` command group.

Only this module catches ``SrcbuildError``: it prints the one-line message and the hint, and
returns the error's exit code (the table in ``srcbuild.errors``). With ``--json`` the failure is
also printed on stdout as ``{"ok": false, "error": ..., "hint": ..., "exit_code": ...}``.
``--debug`` (or ``SRCBUILD_DEBUG=1``) shows the traceback too.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import click

from srcbuild import __version__
from srcbuild.cli.common import JSON_OUTPUT
from srcbuild.console import reset as reset_output
from srcbuild.errors import SrcbuildError
from srcbuild.proc import stop_on_signals

INTERNAL_ERROR = 70

# Each command lives in its own module, imported only when that command runs (so that
# `srcbuild doctor` does not pay for boto3, rattler or the build engine). name -> "module:object".
COMMANDS = {
    "recipes": "srcbuild.cli.recipes:recipes_group",
    "compat": "srcbuild.cli.compat:compat_command",
    "doctor": "srcbuild.cli.doctor:doctor_command",
    "recommend": "srcbuild.cli.doctor:recommend_command",
    "plan": "srcbuild.cli.build:plan_command",
    "torch": "srcbuild.cli.build:torch_command",
    "torchvision": "srcbuild.cli.build:torchvision_command",
    "verify": "srcbuild.cli.verify:verify_command",
    "smoke": "srcbuild.cli.verify:smoke_command",
    "cache": "srcbuild.cli.cache:cache_group",
    "install": "srcbuild.cli.install:install_cmd",
    "env": "srcbuild.cli.env:env_group",
    "lock": "srcbuild.cli.env:lock_env",
    "work": "srcbuild.cli.work:work_group",
    "toolchain": "srcbuild.cli.toolchain:toolchain_group",
    "container": "srcbuild.cli.container:container_group",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module_name, attr = COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module_name), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="srcbuild")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option("-q", "--quiet", is_flag=True, help="Print only results and errors.")
@click.option("-v", "--verbose", is_flag=True, help="Show every raw command a build runs.")
@click.option("--no-color", is_flag=True, help="No colors (also when NO_COLOR is set or output is not a terminal).")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A settings file [env SRCBUILD_CONFIG; default: srcbuild.toml in the user config directory].",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool, quiet: bool, verbose: bool, no_color: bool, config_file: str | None) -> None:
    """Build PyTorch and torchvision wheels from source for legacy NVIDIA GPUs.

    Settings come from the command line, then SRCBUILD_* variables, then the config file."""
    from srcbuild.config import configured
    from srcbuild.console import configure

    ctx.with_resource(configured(config_file, os.environ))  # the environment is restored when the command ends
    environ = dict(os.environ)  # read once, here; commands take it from command_environ()
    ctx.ensure_object(dict)["environ"] = environ
    configure(quiet=quiet, verbose=verbose, no_color=no_color, environ=environ)


def _debug_requested(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("SRCBUILD_DEBUG", "") not in ("", "0")


def _fail(
    message: str, hint: str | None, code: int, as_json: bool, details: dict[str, Any] | None = None
) -> int:
    """Report a failure: ``error:``/``hint:`` lines on stderr, and the JSON object with ``--json``."""
    click.echo(f"error: {message}", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)
    if as_json and not JSON_OUTPUT.printed:  # a result already printed carries its own failure
        payload = {"ok": False, "error": message, "hint": hint, "exit_code": code, **(details or {})}
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
        sys.stdout.flush()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run srcbuild with ``argv`` (without the program name); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    JSON_OUTPUT.printed = False
    reset_output()
    try:
        with stop_on_signals():  # SIGTERM and SIGHUP stop a build as Ctrl-C does
            result = cli.main(args=args, prog_name="srcbuild", standalone_mode=False, obj={"argv": args})
    except SrcbuildError as exc:
        if debug:
            traceback.print_exc()
        return _fail(exc.message, exc.hint, exc.exit_code, as_json, exc.details)
    except (click.exceptions.Abort, KeyboardInterrupt):
        return _fail("interrupted", None, 130, as_json)
    except click.ClickException as exc:
        if not as_json:
            exc.show()
            return exc.exit_code
        ctx = getattr(exc, "ctx", None)
        return _fail(exc.format_message(), f"{ctx.command_path if ctx else 'srcbuild'} --help", exc.exit_code, True)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Exception as exc:
        if debug:
            traceback.print_exc()
        return _fail(
            f"internal error: {type(exc).__name__}: {exc}",
            "this is a bug in srcbuild; rerun with --debug and report the traceback",
            INTERNAL_ERROR,
            as_json,
        )
    return result if isinstance(result, int) else 0


def entrypoint() -> None:
    code = main()
    if "rattler" in sys.modules:
        # py-rattler's Rust runtime keeps native threads that can abort the interpreter while it
        # finalizes ("PyGILState_Release: thread state ... must be current when releasing",
        # SIGABRT after the work is done). Everything is written and closed by now: leave directly.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
