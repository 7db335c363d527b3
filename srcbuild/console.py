"""Terminal output in one place: the console every command prints through, tables, verbosity and color.

- Width: the terminal's when stdout is one, else 80 columns (``COLUMNS`` overrides both), never
  more than ``MAX_WIDTH``. Tables wrap inside their cells to fit, so a row never spills onto the
  next line of an 80-column terminal or a log file.
- Color: off with ``--no-color``, with ``NO_COLOR`` set (https://no-color.org), or when the
  output is not a terminal.
- Verbosity: ``-q`` (errors and results only), default (one line per command saying what it
  does), ``-v`` (the raw commands too). Set once by the command line, read by whoever prints.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import IO

from rich import box
from rich.console import Console
from rich.table import Table

MAX_WIDTH = 160
DEFAULT_WIDTH = 80
SHORT_CELL = 14  # a column whose values are all this short is not wrapped


class Verbosity(IntEnum):
    QUIET = 0
    NORMAL = 1
    VERBOSE = 2


@dataclass
class OutputSettings:
    """What the global options chose; the defaults are those of a plain ``srcbuild`` call."""

    verbosity: Verbosity = Verbosity.NORMAL
    color: bool = True
    environ: Mapping[str, str] = field(default_factory=dict)  # the command's (NO_COLOR, COLUMNS)


SETTINGS = OutputSettings()


def configure(
    quiet: bool = False, verbose: bool = False, no_color: bool = False, environ: Mapping[str, str] | None = None
) -> None:
    """Apply the global ``-q``/``-v``/``--no-color`` options (``-v`` wins over ``-q``) and the
    command's environment (``NO_COLOR``, ``COLUMNS``; none: a plain call outside the command line)."""
    SETTINGS.verbosity = Verbosity.VERBOSE if verbose else Verbosity.QUIET if quiet else Verbosity.NORMAL
    SETTINGS.color = not no_color
    SETTINGS.environ = dict(environ or {})


def reset() -> None:
    configure()


def color_wanted(stream: IO[str], environ: Mapping[str, str]) -> bool:
    if not SETTINGS.color or environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def output_width(stream: IO[str], environ: Mapping[str, str]) -> int:
    """The columns to fit: ``COLUMNS``, else the terminal's, else 80; at most ``MAX_WIDTH``."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return min(int(columns), MAX_WIDTH)
    isatty = getattr(stream, "isatty", None)
    if isatty and isatty():
        return min(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, MAX_WIDTH)
    return DEFAULT_WIDTH


def make_console(stderr: bool = False, file: IO[str] | None = None, progress: bool = False) -> Console:
    """The console a command prints through (stdout, or stderr with ``stderr=True``).

    A ``progress`` console (a build's steps and commands) does not wrap long lines and prints
    nothing with ``-q``: the result and the errors are printed by the command itself."""
    stream = file or (sys.stderr if stderr else sys.stdout)
    color = color_wanted(stream, SETTINGS.environ)
    return Console(
        file=stream,
        width=output_width(stream, SETTINGS.environ),
        highlight=False,
        no_color=not color,
        color_system="auto" if color else None,
        soft_wrap=progress,
        quiet=progress and SETTINGS.verbosity == Verbosity.QUIET,
    )


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Table:
    """A table whose long cells wrap to fit the console (``fold`` for long words such as paths).

    The first column, which names the row, and columns of short values (versions, sizes) are
    never wrapped, so that the space goes to the columns of prose."""
    cells = [["-" if cell is None or cell == "" else str(cell) for cell in row] for row in rows]
    result = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, expand=False)
    for index, column in enumerate(columns):
        longest = max((len(line) for row in cells if index < len(row) for line in row[index].splitlines()), default=0)
        short = index == 0 or longest <= SHORT_CELL
        result.add_column(column, overflow="fold", no_wrap=short, min_width=len(column) if short else None)
    for row in cells:
        result.add_row(*row)
    return result


def print_table(
    title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]], console: Console | None = None
) -> None:
    (console or make_console()).print(table(title, columns, rows))


__all__ = [
    "SETTINGS",
    "OutputSettings",
    "Verbosity",
    "configure",
    "make_console",
    "output_width",
    "print_table",
    "table",
]
