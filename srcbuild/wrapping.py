"""Text wrapped to a width for a terminal or a log: prose at spaces, a command meant to be pasted
whole or continued with `` \\``, a URL or a path never split (``wrap_line``), and the width to wrap
to (``output_width``).

Its own module, with nothing but the standard library, so that a command that prints a few lines
(``srcbuild.quick_hit``) wraps them as every other command does without importing the console's
tables and settings; ``srcbuild.console`` prints through it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own constant: importing typing costs a short command milliseconds
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import IO

MAX_WIDTH = 160
DEFAULT_WIDTH = 80


# The first word of a command meant to be pasted (after a "label: " or at the start of a line).
COMMAND_WORDS = frozenset(
    (
        *("srcbuild", "pip", "pip3", "python", "python3", "apt-get", "apt", "sudo", "dnf", "yum", "conda"),
        *("mamba", "micromamba", "uv", "export", "eval", "curl", "wget", "git", "bash", "tar", "mv", "rm"),
        *("ln", "cp", "mkdir", "chmod", "podman", "docker", "nvidia-smi", "nvidia-ctk", "lspci", "systemctl"),
        *("update-alternatives", "ulimit", "ssh-keygen"),
    )
)
# a program named by its path: srcbuild in its venv, the Python (and pip) of an environment
_PROGRAM_PATHS = ("/srcbuild", "/bin/python", "/bin/python3", "/bin/pip")
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_NAME_START = frozenset(_LETTERS + "_")
_NAME = frozenset(_LETTERS + "0123456789_")


# (no regular expressions here: importing re costs a short command about 6 ms of CPU)
def _is_assignment(word: str) -> bool:
    """``NAME=value`` with no blank in the value (a shell's variable assignment)."""
    name, equals, value = word.partition("=")
    return bool(equals and name and name[0] in _NAME_START and set(name) <= _NAME) and not any(
        c.isspace() for c in value
    )


def _is_versioned_python(word: str) -> bool:
    """``python3.N`` (N one or more digits)."""
    return word.startswith("python3.") and word[8:].isdecimal()


def _backtick_pieces(text: str) -> list[str]:
    """``text`` split around each `...` span, the spans kept (as ``re.split(r"(`[^`]*`)", text)``)."""
    pieces: list[str] = []
    at = 0
    while True:
        start = text.find("`", at)
        end = text.find("`", start + 1) if start >= 0 else -1
        if end < 0:
            return [*pieces, text[at:]]
        pieces += [text[at:start], text[start : end + 1]]
        at = end + 1


def is_command_start(words: Sequence[str]) -> bool:
    """Whether ``words`` begin a shell command: a command word (``srcbuild``, ``pip``, ``sudo``, a
    path ending in ``/srcbuild`` or ``/bin/python``, ``python3.9``), after any ``VAR=value`` assignments; words with a
    word ending in ``:`` after the first are prose, not a command."""
    rest = list(words)
    while rest and _is_assignment(rest[0]) and len(rest) > 1:
        rest = rest[1:]
    if not rest:
        return False
    if any(word.endswith(":") for word in rest[1:]):  # prose ("srcbuild will fetch: CUDA 9.2 ...")
        return False
    first = rest[0]
    return first in COMMAND_WORDS or _is_versioned_python(first) or first.endswith(_PROGRAM_PATHS)


def output_width(stream: IO[str], environ: Mapping[str, str]) -> int:
    """The columns to fit: ``COLUMNS``, else the terminal's, else 80; at most ``MAX_WIDTH``."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return min(int(columns), MAX_WIDTH)
    isatty = getattr(stream, "isatty", None)
    if isatty and isatty():
        import shutil  # only for a terminal: its import costs a pipe's output a few milliseconds

        return min(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, MAX_WIDTH)
    return DEFAULT_WIDTH



def shell_words(text: str) -> list[str]:
    """``text`` split at spaces, a quoted part ('...' or "...") kept in one word with its spaces."""
    words: list[str] = []
    quote = ""
    for piece in text.split(" "):
        if quote:
            words[-1] += " " + piece
        elif piece:
            words.append(piece)
        else:
            continue
        for char in piece:
            if quote and char == quote:
                quote = ""
            elif not quote and char in "'\"":
                quote = char
    return words


def command_span(words: Sequence[str]) -> tuple[int, int] | None:
    """Where the command in a line's ``words`` begins and ends, or None: after ``$``, after the
    first ``label:`` followed by a command word, or from the start of a line without a label; it
    ends before a parenthesis that follows it (a note on the command)."""
    if len(words) > 1 and words[0] == "$":
        return 1, len(words)
    starts = [i for i in range(1, len(words)) if words[i - 1].endswith(":") and is_command_start(words[i:])]
    if not starts and is_command_start(words) and not any(word.endswith(":") for word in words):
        starts = [0]
    if not starts:
        return None
    end = next((j for j in range(starts[0] + 1, len(words)) if words[j].startswith("(")), len(words))
    return starts[0], end


def command_lines(words: Sequence[str], indent: str, width: int) -> list[str]:
    """A command on lines of at most ``width`` columns where it can be: whole on one line when it
    fits, else continued with `` \\`` between words (a word is never split; one longer than the
    line stands alone on its line)."""
    whole = indent + " ".join(words)
    if len(whole) <= width:
        return [whole]
    lines: list[str] = []
    current = indent
    more = indent + "  "
    for word in words:
        start = current in (indent, more)
        if not start and len(current) + 1 + len(word) + 2 > width:
            lines.append(current + " \\")
            current = more
            start = True
        current = current + word if start else current + " " + word
    lines.append(current)
    return lines


def _prose(body: str, indent: str, more: str, width: int) -> list[str]:
    """``body`` wrapped at spaces, never inside a word (a URL or path longer than the line stands
    alone); a `...` command stays on one line, or when longer than a line continues with `` \\``
    between its words, so that what is between the backticks still pastes."""
    units: list[tuple[str, int]] = []  # (text, the span it belongs to; 0: none)
    glue = False  # the last piece ended without a space: the next word continues its unit
    for number, piece in enumerate(_backtick_pieces(body)):
        if not piece:
            continue
        quoted = piece.startswith("`") and piece.endswith("`") and len(piece) > 1
        words = shell_words(piece) if quoted else piece.split()
        if quoted and (len(piece) + len(more) <= width or len(words) == 1):
            words = [piece]
        part = number if quoted and len(words) > 1 else 0
        for index, word in enumerate(words):
            if index == 0 and units and (glue or (not quoted and not piece[0].isspace())):
                units[-1] = (units[-1][0] + word, units[-1][1])
            else:
                units.append((word, part))
        glue = not piece[-1].isspace() and not quoted
    lines: list[str] = []
    current, span = indent, 0
    for text, part in units:
        fresh = current.strip() == ""
        limit = width - 2 if part else width  # room for " \\" inside a command
        if not fresh and len(current) + 1 + len(text) > limit:
            lines.append(current + (" \\" if part and part == span else ""))
            current, fresh = more, True
        current = current + text if fresh else current + " " + text
        span = part
    lines.append(current)
    return [line for line in lines if line.strip()] or [indent + body]


def wrap_line(line: str, width: int = DEFAULT_WIDTH) -> list[str]:
    """``line`` in pieces of at most ``width`` columns; the pieces after the first are indented two
    columns more than the line. A command meant to be pasted (``label: srcbuild ...``, ``pip install
    ...``) is never broken inside: it goes whole on a line of its own, or continues with `` \\``;
    URLs, paths and `...` are never split."""
    if len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = " " * (len(line) - len(body))
    more = indent + "  " if len(indent) + 2 < width // 2 else indent
    words = shell_words(body)
    span = command_span(words)
    if span is not None:
        start, end = span
        label = _prose(" ".join(words[:start]), indent, more, width) if start else []
        at = more if start else indent
        tail = _prose(" ".join(words[end:]), more, more, width) if end < len(words) else []
        return label + command_lines(words[start:end], at, width) + tail
    return _prose(body, indent, more, width)


def clip_words(text: str, limit: int = 160) -> str:
    """``text`` shortened to about ``limit`` characters at a space, `` ...`` marking the rest: a
    word (a path, a file:line) is kept whole, never cut."""
    if len(text) <= limit:
        return text
    words = text.split(" ")
    kept = [words[0]]
    for word in words[1:]:
        if len(" ".join(kept)) + 1 + len(word) > limit:
            break
        kept.append(word)
    return " ".join(kept) + " ..."


def wrap_text(text: str, width: int = DEFAULT_WIDTH) -> str:
    """Every line of ``text`` wrapped by ``wrap_line``; the final newline (or its absence) is kept."""
    lines = [piece for line in text.splitlines() for piece in wrap_line(line, width)]
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
