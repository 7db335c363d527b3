"""What a piece of srcbuild's own work read from the file system, for a record that must say when it
no longer holds (``srcbuild.quick_hit``).

Python's audit hooks report every file opened and directory listed (``open``, ``os.listdir``,
``os.scandir``, ``sqlite3.connect``), the temporary files and directories made
(``tempfile.mkstemp``, ``tempfile.mkdtemp``) and the programs started (``subprocess.Popen``),
whoever calls them. A path only asked about (``Path.exists``, ``os.path.isfile``,
``shutil.which``, ``Path.resolve``) raises no audit event, so ``os.stat``, ``os.lstat`` and
``os.access`` are wrapped while a trace runs and put back when it ends. What a started program reads
is its own and is not seen here: the caller decides what each program it ran depended on.

An audit hook cannot be removed: the one hook is added with the first trace and does nothing while no
trace runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class ReadTrace:
    """The paths one traced piece of work touched (absolute, as strings)."""

    def __init__(self) -> None:
        self.opened: set[str] = set()  # files read
        self.listed: set[str] = set()  # directories listed
        self.asked: set[str] = set()  # paths stat'ed, lstat'ed or access()ed: present or not
        self.written: set[str] = set()  # files opened to write
        self.made: set[str] = set()  # temporary files and directories made
        self.programs: list[tuple[str, ...]] = []  # the argv of every program started
        self.incomplete = False  # an event it could not read: what it says is not the whole story

    def is_made(self, path: str) -> bool:
        """Whether ``path`` is (under) a temporary file or directory the work made, or a file it wrote."""
        return path in self.written or any(path == m or path.startswith(m + os.sep) for m in self.made)


_ACTIVE: list[ReadTrace] = []
_HOOKED = False


def _path(value: Any) -> str | None:
    if isinstance(value, int) or value is None:
        return None  # a descriptor: what it is was recorded when it was opened
    try:
        return os.path.abspath(os.fsdecode(value))
    except (TypeError, ValueError):
        return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _ACTIVE:
        _noting(_ACTIVE[-1], _record, event, args)


def _noting(trace: ReadTrace, note: Any, *args: Any) -> None:
    """``note(trace, *args)``; a note that fails marks the trace incomplete instead of failing the
    call it was taken for (an audit hook that raises stops the call it audits, as would a wrapped
    ``os.stat``)."""
    try:
        note(trace, *args)
    except Exception:
        trace.incomplete = True


def _record(trace: ReadTrace, event: str, args: tuple[Any, ...]) -> None:
    if event == "open":
        path = _path(args[0])
        if path is None:
            return
        mode, flags = args[1], args[2]
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & _WRITES)
        (trace.written if writes else trace.opened).add(path)
    elif event in ("os.listdir", "os.scandir"):
        path = _path(args[0] if args and args[0] is not None else ".")
        if path is not None:
            trace.listed.add(path)
    elif event == "sqlite3.connect":
        path = _path(args[0])
        if path is not None:  # what a write-ahead log or a journal holds is the database's too
            trace.opened.update((path, path + "-wal", path + "-journal"))
    elif event in ("tempfile.mkstemp", "tempfile.mkdtemp"):
        path = _path(args[0])
        if path is not None:
            trace.made.add(path)
    elif event == "subprocess.Popen":
        argv = args[1]
        trace.programs.append(tuple(os.fsdecode(a) for a in ([argv] if isinstance(argv, (str, bytes)) else argv)))


def _ask(trace: ReadTrace, path: Any) -> None:
    where = _path(path)
    if where is not None:
        trace.asked.add(where)


def _asking(function: Any) -> Any:
    def asked(path: Any, *args: Any, **kwargs: Any) -> Any:
        if _ACTIVE:
            _noting(_ACTIVE[-1], _ask, path)
        return function(path, *args, **kwargs)

    asked.__wrapped__ = function  # type: ignore[attr-defined]
    return asked


def current() -> ReadTrace | None:
    """The trace running now, if any."""
    return _ACTIVE[-1] if _ACTIVE else None


@contextmanager
def tracing() -> Iterator[ReadTrace]:
    """Trace what the code run inside reads (in this thread and every other, while it runs)."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED = True
    trace = ReadTrace()
    originals = (os.stat, os.lstat, os.access)
    os.stat, os.lstat, os.access = (_asking(f) for f in originals)
    _ACTIVE.append(trace)
    try:
        yield trace
    finally:
        _ACTIVE.remove(trace)
        os.stat, os.lstat, os.access = originals
