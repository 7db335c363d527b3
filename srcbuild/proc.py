"""The one module that runs other programs.

``run`` echoes ``+ cmd``, runs with an explicit environment, drains stdout and stderr together,
tees the full output to a log file, feeds each line to an optional callback (progress bars) and,
on Ctrl-C, terminates the whole process group before re-raising. ``probe`` runs a short query
(``gcc-11 --version``) and returns its output or None when the tool is missing or fails;
``Background`` runs such probes while the caller goes on (doctor's probes overlap, and an
install's target probe overlaps its lookup). ``Waiting`` starts a program whose own start-up is
slow (pip loads itself for about a third of a second) while the caller is still deciding whether
to run it: the program waits for one line on its input, then runs as ``run`` would run it.

Each command runs in its own session (so a Ctrl-C reaches srcbuild alone, which then stops the
command's whole process group itself). ``stop_on_signals()`` makes SIGTERM and SIGHUP behave like
Ctrl-C in the main thread, so a build killed by its parent (a closed terminal, a job scheduler,
``kill``) also terminates and reaps its children, records the interrupted step and releases its
locks. Only the first of these signals interrupts; later ones, while srcbuild is stopping its
children, are ignored, so the cleanup itself is never cut short (what is left after 10 s gets SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Generic, TypeVar

from srcbuild.errors import Interrupted
from srcbuild.records import record

T = TypeVar("T")


@record
class RunResult:
    """How a command ended: its exit code and the last lines it printed."""

    argv: tuple[str, ...]
    returncode: int
    tail: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.returncode == 0


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_received: list[int] = []  # the stop signal that arrived inside stop_on_signals(), if any


def _stop(signum: int, frame: object) -> None:
    if _received:  # already stopping: let the cleanup finish
        return
    _received.append(signum)
    raise KeyboardInterrupt


def stop_signal() -> str | None:
    """The name of the signal that stopped this run ("SIGTERM"), or None."""
    return signal.Signals(_received[0]).name if _received else None


def stopped_by() -> str:
    """" by SIGTERM" (or SIGHUP) for a message when a signal other than Ctrl-C's stopped this run."""
    name = stop_signal()
    return f" by {name}" if name and name != "SIGINT" else ""


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt (once) while this is active.

    Outside the main thread (where Python cannot set handlers) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _received.clear()


def _environment(argv: Sequence[str], env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The environment a command runs with: ``env`` as given, plus ``GIT_NO_REPLACE_OBJECTS=1`` for
    git, so a ``git replace`` in a repository never stands in for the commit srcbuild asked for."""
    if env is None:
        return None
    if argv and os.path.basename(argv[0]) == "git":
        return {**env, "GIT_NO_REPLACE_OBJECTS": "1"}
    return dict(env)


def format_argv(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def run(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    on_line: Callable[[str], None] | None = None,
    echo: IO[str] | None = None,
    tail_lines: int = 40,
    stdin_devnull: bool = True,
) -> RunResult:
    """Run ``argv`` to completion; never raises for a non-zero exit (the caller decides).

    Raises ``Interrupted`` after killing the process group when the user presses Ctrl-C, and
    ``FileNotFoundError`` when the program does not exist.
    """
    argv = tuple(str(a) for a in argv)
    line = f"+ {format_argv(argv)}"
    if echo is not None:
        print(line, file=echo, flush=True)
    log: IO[str] | None = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115
        log.write(line + "\n")
        log.flush()
    try:
        proc = _start(argv, env, subprocess.DEVNULL if stdin_devnull else None, cwd)
        return _finish(proc, argv, log, on_line, tail_lines)
    finally:
        if log is not None:
            log.close()


def _start(
    argv: tuple[str, ...], env: Mapping[str, str] | None, stdin: int | None, cwd: str | Path | None = None
) -> subprocess.Popen[str]:
    """``argv`` started in its own session, stdout and stderr together as lines of text (``run``'s
    commands and ``Waiting``'s programs alike)."""
    return subprocess.Popen(
        argv,
        cwd=str(cwd) if cwd is not None else None,
        env=_environment(argv, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=stdin,
        start_new_session=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
    )


def _finish(
    proc: subprocess.Popen[str],
    argv: tuple[str, ...],
    log: IO[str] | None,
    on_line: Callable[[str], None] | None,
    tail_lines: int,
) -> RunResult:
    """Drain a started command's output (to ``log`` and ``on_line``) until it exits; on Ctrl-C stop its
    whole process group and raise ``Interrupted``."""
    tail: deque[str] = deque(maxlen=tail_lines)
    try:
        assert proc.stdout is not None
        for out_line in proc.stdout:
            text = out_line.rstrip("\n")
            tail.append(text)
            if log is not None:
                log.write(out_line)
            if on_line is not None:
                on_line(text)
        returncode = proc.wait()
    except KeyboardInterrupt:
        _terminate_group(proc)
        raise Interrupted(
            f"interrupted{stopped_by()} while running {argv[0]}", "run the same command with --resume to continue"
        ) from None
    return RunResult(argv=argv, returncode=returncode, tail=tuple(tail))


def _terminate_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the whole process group, then SIGKILL what is left after a grace period.

    Waiting for the leader is not enough: ninja's compilers are in the group too and may outlive
    it, so this waits until no process of the group is left.
    """
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if _wait_group(proc, wait):
            break
    proc.poll()


def _wait_group(proc: subprocess.Popen[str], wait: float) -> bool:
    """True once no process of ``proc``'s group is left, polling for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        proc.poll()  # reap the leader once it exits (a zombie still counts as a member)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def probe(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    ok_codes: tuple[int, ...] = (0,),
    stdin: Path | None = None,
) -> str | None:
    """Run a quick query and return its combined output, or None if it is missing or fails.

    ``stdin``: a file fed to the program's standard input (``ssh-keygen -Y verify`` reads its
    message there); otherwise the input is /dev/null.
    """
    try:
        with open(stdin, "rb") if stdin is not None else open(os.devnull, "rb") as feed:
            done = subprocess.run(
                [str(a) for a in argv],
                env=_environment(argv, env),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=feed,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=timeout,
                check=False,
            )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode not in ok_codes:
        return None
    return done.stdout


class Background(Generic[T]):
    """``call()`` running in a thread from now on; ``result()`` waits for it and returns its value
    (or raises what it raised). For probes that mostly wait on a child process: they overlap each
    other and the caller's own work instead of running one after the other."""

    def __init__(self, call: Callable[[], T]) -> None:
        self._value: list[T] = []
        self._error: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], T]) -> None:
        try:
            self._value.append(call())
        except BaseException as exc:  # handed to the caller by result()
            self._error.append(exc)

    def result(self) -> T:
        """The call's value, once it returned; what it raised is raised here, in the caller's thread."""
        self._thread.join()
        if self._error:
            raise self._error[0]
        return self._value[0]


class Waiting:
    """``argv`` started now, waiting for one line on its standard input before it does anything.

    ``go(line, shown)`` sends the line, closes the input and then drains the output as ``run`` does
    (echoing ``+ shown``: the plain command that does the same, which is what the user can paste);
    ``cancel()`` closes the input unsent, so the program exits by itself, and reaps it. For a program
    whose start-up is slow while the caller still decides whether it runs at all (``srcbuild
    install`` lets pip load itself during the cache lookup and the fit check).
    Raises ``OSError`` when the program cannot be started.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self.argv = tuple(str(a) for a in argv)
        self._proc = _start(self.argv, env, subprocess.PIPE)
        self._done = False

    def go(self, line: str, shown: Sequence[str], echo: IO[str] | None = None, tail_lines: int = 40) -> RunResult:
        """Tell the program ``line`` (one line) and wait for it to finish; never raises for its exit code."""
        shown = tuple(str(a) for a in shown)
        if echo is not None:
            print(f"+ {format_argv(shown)}", file=echo, flush=True)
        self._done = True
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it ended early: its output and exit code say why
            self._proc.stdin.write(line.rstrip("\n") + "\n")
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.close()
        return _finish(self._proc, shown, None, None, tail_lines)

    def cancel(self) -> None:
        """Not needed after all: it has done nothing but start, so it is stopped (its process group
        terminated) and reaped. Does nothing after ``go``."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        _terminate_group(self._proc)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
