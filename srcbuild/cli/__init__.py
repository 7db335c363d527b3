"""The command line: ``main(argv) -> int`` and the ``srcbuild`` command group.

Only this module catches ``SrcbuildError``: it prints the one-line message and the hint, and
returns the error's exit code. ``--debug`` (or ``SRCBUILD_DEBUG=1``) shows the traceback too.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence

import click

from srcbuild import __version__
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
def cli(debug: bool) -> None:
    """Build PyTorch and torchvision wheels from source for legacy NVIDIA GPUs."""


def _debug_requested(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("SRCBUILD_DEBUG", "") not in ("", "0")


def main(argv: Sequence[str] | None = None) -> int:
    """Run srcbuild with ``argv`` (without the program name); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    try:
        with stop_on_signals():  # SIGTERM and SIGHUP stop a build as Ctrl-C does
            result = cli.main(args=args, prog_name="srcbuild", standalone_mode=False)
    except SrcbuildError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Exception as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
        click.echo("hint: this is a bug in srcbuild; rerun with --debug and report the traceback", err=True)
        return INTERNAL_ERROR
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
