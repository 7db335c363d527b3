"""Every step that starts has its log file: what the console prints during the step goes there too.

A step's commands append their output to the same file (``proc.run``'s ``log_path``); the lines a
step prints itself (the preflight's findings, what provisioning fetched, verification's coverage)
reach the log through ``tee_console``, without color codes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, cast

from rich.console import Console

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_REDRAW = re.compile(r"\r|\x1b\[(?:\?25|2K|\d*[AG])")  # a live progress display redrawing itself


class _Tee(io.TextIOBase):
    """Writes to the console's stream and, without color codes, to the step's log."""

    def __init__(self, stream: IO[str], log: IO[str]) -> None:
        self._stream = stream
        self._log = log

    def write(self, text: str) -> int:
        self._stream.write(text)
        if not _REDRAW.search(text):  # the progress display's frames stay on the terminal
            self._log.write(_ANSI.sub("", text))
            self._log.flush()
        return len(text)

    def flush(self) -> None:
        self._stream.flush()
        self._log.flush()

    def isatty(self) -> bool:
        isatty = getattr(self._stream, "isatty", None)
        return bool(isatty and isatty())

    def fileno(self) -> int:
        return self._stream.fileno()


@contextmanager
def tee_console(console: Console, log: Path, header: str) -> Iterator[None]:
    """Create ``log`` with ``header`` and copy what ``console`` prints into it until the block ends."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8", errors="replace") as handle:
        handle.write(header.rstrip("\n") + "\n")
        handle.flush()
        stream = console.file
        console.file = cast(IO[str], _Tee(stream, handle))
        try:
            yield
        finally:
            console.file = stream
