"""The command line: ``main(argv) -> int`` and the ``srcbuild`` command group.

Only this module catches ``SrcbuildError``: it prints the one-line message and the hint, and
returns the error's exit code. ``--debug`` (or ``SRCBUILD_DEBUG=1``) shows the traceback too.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

import click

from srcbuild import __version__
from srcbuild.cli.build import plan_command, torch_command, torchvision_command
from srcbuild.cli.cache import cache_group
from srcbuild.cli.compat import compat_command
from srcbuild.cli.doctor import doctor_command, recommend_command
from srcbuild.cli.env import env_group, lock_env
from srcbuild.cli.install import install_cmd
from srcbuild.cli.recipes import recipes_group
from srcbuild.cli.verify import smoke_command, verify_command
from srcbuild.errors import SrcbuildError

INTERNAL_ERROR = 70


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="srcbuild")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def cli(debug: bool) -> None:
    """Build PyTorch and torchvision wheels from source for legacy NVIDIA GPUs."""


# Each command lives in its own module; register it here.
cli.add_command(recipes_group)
cli.add_command(doctor_command)
cli.add_command(recommend_command)
cli.add_command(compat_command)
cli.add_command(plan_command)
cli.add_command(torch_command)
cli.add_command(torchvision_command)
cli.add_command(cache_group)
cli.add_command(install_cmd)
cli.add_command(verify_command)
cli.add_command(smoke_command)
cli.add_command(env_group)
cli.add_command(lock_env)


def _debug_requested(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("SRCBUILD_DEBUG", "") not in ("", "0")


def main(argv: Sequence[str] | None = None) -> int:
    """Run srcbuild with ``argv`` (without the program name); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    try:
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
    sys.exit(main())
