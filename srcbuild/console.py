"""Terminal output in one place: the console every command prints through, tables, verbosity and color.

- Width: the terminal's when stdout is one, else 80 columns (``COLUMNS`` overrides both), never
  more than ``MAX_WIDTH``. Tables wrap inside their cells to fit, so a row never spills onto the
  next line of an 80-column terminal or a log file.
- Color: off with ``--no-color``, with ``NO_COLOR`` set (https://no-color.org), or when the
  output is not a terminal.
- Text: lines of prose or ``name: value`` (``doctor``, ``recommend``, ``plan``) are wrapped by
  ``wrap_text``: a long line continues on the next, indented two more columns than its start.
  A command meant to be pasted is never broken inside (whole on a line of its own, or continued
  with `` \\``), and URLs and paths are never split: a word longer than the line stands alone.
- Verbosity: ``-q`` (errors and results only), default (one line per command saying what it
  does), ``-v`` (the raw commands too). Set once by the command line, read by whoever prints.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import IO, TYPE_CHECKING

from srcbuild.wrapping import (  # noqa: F401  (printed through here, and named here by other modules)
    COMMAND_WORDS,
    DEFAULT_WIDTH,
    MAX_WIDTH,
    clip_words,
    command_lines,
    command_span,
    is_command_start,
    output_width,
    shell_words,
    wrap_line,
    wrap_text,
)

if TYPE_CHECKING:  # rich is imported by what draws with it: a command printing plain lines never loads it
    from rich.console import Console

SHORT_CELL = 14  # a column whose values are all this short is not wrapped
MIN_CELL = 8  # the narrowest a column of long words gets before its words run past its edge


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


def make_console(stderr: bool = False, file: IO[str] | None = None, progress: bool = False) -> Console:
    """The console a command prints through (stdout, or stderr with ``stderr=True``).

    A ``progress`` console (a build's steps and commands) does not wrap long lines and prints
    nothing with ``-q``: the result and the errors are printed by the command itself."""
    from rich.console import Console

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


@dataclass(frozen=True)
class Table:
    """A table as data: a title, the column names and the rows of text, laid out once by
    ``table_lines`` for the width it is printed at."""

    title: str | None
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


GAP = 2  # blanks between two columns


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Table:
    """A table whose cells are text (``None`` and ``""`` show as ``-``); ``show_table`` prints it."""
    width = len(columns)
    cells = tuple(
        tuple(("-" if cell is None or cell == "" else str(cell)) for cell in row)
        + ("-",) * (width - len(row))
        for row in rows
    )
    return Table(title, tuple(columns), cells)


def _widest(texts: Iterable[str]) -> tuple[int, int]:
    """(the longest line, the longest word) of ``texts``."""
    line = word = 0
    for text in texts:
        for part in text.splitlines() or [""]:
            line = max(line, len(part))
            if len(part) > word:  # no word of a shorter line can be longer
                word = max(word, max((len(w) for w in part.split()), default=0))
    return line, word


def column_widths(drawn: Table, width: int) -> list[int] | None:
    """The width of each column so that the table fits ``width`` columns, or None when even the
    column names side by side do not fit.

    Each column starts at its longest line; while the table is too wide, the widest column that
    can still lose a column without cutting a word (the first column, which names the row, and
    columns of short values last) gives one up. A word too long for any width left to its column
    (a path) is not cut either: ``_row_lines`` lets it run on past its column's edge."""
    count = len(drawn.columns)
    natural: list[int] = []
    floor: list[int] = []
    names: list[int] = []
    for index, name in enumerate(drawn.columns):
        line, word = _widest([name, *(row[index] for row in drawn.rows)])
        natural.append(line)
        floor.append(word)
        names.append(max(MIN_CELL, _widest([name])[1]))
    room = width - GAP * (count - 1)
    if sum(natural) <= room:
        return natural
    if sum(names) > room:
        return None
    while sum(floor) > room:  # the column of the longest word lets the words too long run past its edge
        widest = max(range(count), key=lambda i: floor[i] - names[i])
        left = room - (sum(floor) - floor[widest])
        words = (len(w) for row in drawn.rows for w in row[widest].split() if len(w) <= left)
        floor[widest] = max(names[widest], max(words, default=0))
    widths = list(natural)
    keep = [index == 0 or natural[index] <= SHORT_CELL for index in range(count)]
    excess = sum(widths) - room
    for last_resort in (False, True):
        while excess > 0:
            candidates = [i for i in range(count) if widths[i] > floor[i] and (last_resort or not keep[i])]
            if not candidates:
                break
            widest = max(candidates, key=lambda i: widths[i])
            others = [widths[i] for i in candidates if i != widest]
            # give up at once what brings it down to the next widest (or its floor), at most the excess
            step = max(1, min(excess, widths[widest] - max(floor[widest], max(others, default=0))))
            widths[widest] -= step
            excess -= step
    return widths


def wrap_cell(text: str, width: int) -> list[str]:
    """``text`` on lines of at most ``width`` columns, broken at spaces only (a longer word, such
    as a path, stands whole on a line of its own); the lines of a text of several stay apart."""
    lines: list[str] = []
    for part in text.splitlines() or [""]:
        if len(part) <= width:
            lines.append(part)
            continue
        current = ""
        for word in part.split():
            if current and len(current) + 1 + len(word) > width:
                lines.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        lines.append(current)
    return lines


def _row_lines(cells: Sequence[str], widths: Sequence[int], width: int) -> list[str]:
    """One row's lines. A cell's line longer than its column (a word that cannot be cut) runs on
    over the columns to its right, whose text starts on the line after it; when it would run past
    ``width`` it stands on a line of its own, moved left as far as it must to fit."""
    pad = " " * GAP
    if all(len(cell) <= w and "\n" not in cell for cell, w in zip(cells, widths)):
        return [pad.join(cell.ljust(w) for cell, w in zip(cells, widths)).rstrip()]
    wrapped = [wrap_cell(cell, w) for cell, w in zip(cells, widths)]
    if all(len(line) <= w for lines, w in zip(wrapped, widths) for line in lines):
        height = max(map(len, wrapped))
        padded = [
            [line.ljust(w) for line in lines] + [" " * w] * (height - len(lines)) for lines, w in zip(wrapped, widths)
        ]
        return [pad.join(parts).rstrip() for parts in zip(*padded)]
    below = -1  # the last line on which a cell to the left runs on
    for column, (lines, w) in enumerate(zip(wrapped, widths)):
        if below >= 0:
            wrapped[column] = lines = [""] * (below + 1) + lines
        long = [n for n, line in enumerate(lines) if len(line) > w]
        if long:
            below = max(below, long[-1])
    out = []
    for n in range(max(len(lines) for lines in wrapped)):
        line = ""
        for column, (lines, w) in enumerate(zip(wrapped, widths)):
            part = lines[n] if n < len(lines) else ""
            start = len(line) + (len(pad) if column else 0)
            if len(part) > w and start + len(part) > width:  # on a line of its own, as far left as it must
                if line.strip():
                    out.append(line.rstrip())
                line = " " * max(0, min(start, width - len(part))) + part
                break
            line += (pad if column else "") + part.ljust(w)
            if len(part) > w:
                break
        out.append(line.rstrip())
    return out


def table_lines(drawn: Table, width: int = DEFAULT_WIDTH, rule: str = "") -> list[str]:
    """The table as lines of at most ``width`` columns, no word or path ever cut and no trailing
    blanks: its title, the column names (followed by a line of ``rule`` when one is given), then
    each row, its long cells wrapped at spaces inside their column.

    When even the column names side by side do not fit, each row becomes a block of
    ``column: value`` lines (wrapped by ``wrap_line``), blocks apart by a blank line."""
    lines = wrap_line(drawn.title, width) if drawn.title else []
    widths = column_widths(drawn, width)
    if widths is None:
        label = max(len(name) for name in drawn.columns) + 2
        for number, row in enumerate(drawn.rows):
            if number:
                lines.append("")
            for name, cell in zip(drawn.columns, row):
                for index, part in enumerate(cell.splitlines() or [""]):
                    head = f"{name}:".ljust(label) if index == 0 else " " * label
                    lines.extend(wrap_line(head + part, width))
        return lines
    lines.extend(_row_lines(drawn.columns, widths, width))
    if rule:
        lines.append((rule * (sum(widths) + GAP * (len(widths) - 1)))[:width])
    for row in drawn.rows:
        lines.extend(_row_lines(row, widths, width))
    return lines


def echo_text(text: str, stderr: bool = False) -> str:
    """Print plain text (not markup) wrapped to the output's width; the text as it was written."""
    stream = sys.stderr if stderr else sys.stdout
    wrapped = wrap_text(text, output_width(stream, SETTINGS.environ))
    stream.write(wrapped)
    stream.flush()
    return wrapped


def print_lines(lines: Iterable[str], console: Console) -> None:
    """Print plain lines (a text of several lines is several) through ``console``, each wrapped to
    its width by ``wrap_line``."""
    for line in (part for text in lines for part in text.splitlines() or [""]):
        for piece in wrap_line(line, console.width):
            console.print(piece, markup=False, highlight=False, soft_wrap=True)


def as_text(drawn: Table, width: int = DEFAULT_WIDTH) -> str:
    """``drawn`` as plain text of at most ``width`` columns, for a result built as a string: no
    rule line, no box-drawing characters, no line with trailing blanks."""
    return "".join(line + "\n" for line in table_lines(drawn, width))


def show_table(drawn: Table, console: Console) -> None:
    """Print a table, laid out once for the console's width: on a terminal with its column names
    in bold over a rule; to a pipe or a file as plain lines that ``grep``, ``cut`` and ``diff``
    read as text (``as_text``: the same columns and wrapping)."""
    if console.quiet:
        return
    if not console.is_terminal:
        console.file.write(as_text(drawn, console.width))
        console.file.flush()
        return
    from rich.text import Text

    lines = table_lines(drawn, console.width, rule="─")
    title = len(wrap_line(drawn.title, console.width)) if drawn.title else 0
    header = next((n for n in range(title, len(lines)) if lines[n] and set(lines[n]) == {"─"}), title)
    for number, line in enumerate(lines):
        style = "italic" if number < title else "bold" if number < header else ""
        console.print(Text(line, style=style), soft_wrap=True)


def print_table(
    title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]], console: Console | None = None
) -> None:
    show_table(table(title, columns, rows), console or make_console())


__all__ = [
    "SETTINGS",
    "OutputSettings",
    "Table",
    "Verbosity",
    "as_text",
    "clip_words",
    "command_lines",
    "command_span",
    "configure",
    "echo_text",
    "is_command_start",
    "make_console",
    "output_width",
    "print_lines",
    "print_table",
    "shell_words",
    "show_table",
    "table",
    "table_lines",
    "wrap_line",
    "wrap_text",
]
