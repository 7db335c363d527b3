"""Pieces every command shares: path options, the JSON switch and result printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

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


def resolve_paths(work_dir: str | None = None, cache_dir: str | None = None) -> Paths:
    return Paths.resolve(work_dir=work_dir, cache_dir=cache_dir)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")
