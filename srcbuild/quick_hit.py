"""A cache hit ``srcbuild install`` made before, made again without deciding it again.

A hit's decision (the recipe and its catalog, the request's fingerprint, the store's lookup, the
target interpreter's answer, the driver's, the fit check) depends on the command line, the
environment, the working directory, the files the process reads and the programs it asks. After
``srcbuild install PACKAGE`` has installed a hit from the local store (``srcbuild.cli.install``),
it writes a record of that decision (``remember``): every path the process read, listed or asked
about (``srcbuild.read_trace``) and every module file it loaded, each with the state it had (a
file: its device, inode, size, mode, modification and change times; a directory it listed: its
inode and times; a directory it only asked about: that it is one; an absent path: that it is
absent); the interpreter the target runs (its real path and state, the C library's and the
machine's names); the driver (below); the wheel's state and uv's; and the lines it printed.

The next ``srcbuild install`` with the same command line (``--into`` may name another
environment), environment and working directory finds that record (``install_again``, called by
``srcbuild.__main__`` before click or any of the decision's modules is imported) and stats what it
names. When everything is as recorded the decision would be the same: uv installs the wheel and
the same lines are printed. A record that is missing, not this user's, damaged or out of date, a
target whose interpreter is another, or uv failing sends the command down the whole path, which
decides again and reports any failure itself. Left out of the environment compared: the shell's
bookkeeping (``_``, ``OLDPWD``, ``PWD``, ``SHLVL``) and uv's own ``UV_*`` variables, which
srcbuild never reads and which reach uv on both paths.

The wheel's hash: the whole path installs the wheel in uv's hash-checking mode (the manifest's
sha256) and records the wheel's state once uv has accepted it. While the file's device, inode,
size, modification and change times are still those, it holds the bytes uv hashed: writing to a
file sets its change time, which no program can set back. This path therefore gives uv the file
without ``--require-hashes``; uv still checks each member's CRC-32 as it unpacks, which catches a
bit that rots on disk. The store's own lookup skips its hash by the same rule
(``CacheEntry.check_fast``: the identity recorded when the wheel was last hashed); uv keys its own
cache of a local wheel on the file's modification time alone, and a repeated install in
hash-checking mode does not hash the file again.

The driver: when no ``nvidia-smi`` was on ``PATH`` the record holds while there still is none.
When a driver answered, the record keeps its answer with the kernel module's
``/proc/driver/nvidia/version``, each GPU's ``/proc/driver/nvidia/gpus/*/information`` and
``nvidia-smi``'s own state, and holds while all of them are unchanged; a machine whose driver
answers without ``/proc/driver/nvidia`` gets no record.

Only ``os``, ``sys``, ``marshal`` and ``zlib`` are imported here (and ``srcbuild.wrapping`` for a
line longer than the output is wide): the point is not importing what the decision needs.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import zlib

import srcbuild

TYPE_CHECKING = False  # typing's own constant: importing typing costs a hit milliseconds
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import TextIO

    from srcbuild.read_trace import ReadTrace

FORMAT = 1
SHELL_VARIABLES = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})
MAX_RECORDS = 64  # a hits directory keeps the newest this many (one per command line and environment)
PLACEHOLDER = "\0into"  # where the --into value stands in the key
DRIVER_DIR = "/proc/driver/nvidia"
# what a path read there says changes without its state showing it: no record is made from it
VOLATILE = ("/proc/", "/sys/", "/dev/")
# srcbuild's caches of what it derives from files a record names itself (the record classes'
# compiled code, the knowledge base's tables: ``srcbuild.records``, ``srcbuild.tables``), written
# when a command exits, and this module's records: none of them changes a decision
DERIVED = ("records", "tables", "hits")

State = tuple  # what ``state`` says of a path: compared whole, never looked into


def user_cache(environ: Mapping[str, str]) -> str:
    """srcbuild's directory in the user's cache directory (``XDG_CACHE_HOME``, else ``~/.cache``),
    as ``platformdirs.user_cache_dir("srcbuild")`` names it on Linux."""
    base = environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "srcbuild")


def hits_dir(environ: Mapping[str, str]) -> str:
    """Where the records are kept: ``hits`` in the user's own cache directory, never a shared cache's."""
    return os.path.join(user_cache(environ), "hits")


def state(path: str, listed: bool = False) -> State | None:
    """The state of ``path`` a record compares; None when it is absent (or cannot be stat'ed)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return ("dir", st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns) if listed else ("dir",)
    return ("file", st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns, st.st_ctime_ns)


def plain(path: str) -> bool:
    """Whether ``path`` is written as ``pathlib`` writes it (no empty or ``.`` part, no trailing
    slash): then ``PATH/bin/python`` joined here is the path the whole command names."""
    parts = path.split("/")
    return bool(path) and not path.startswith("-") and not path.startswith("//") and all(
        part not in ("", ".") for part in parts[1 if path.startswith("/") else 0 :]
    )


def key(argv: Sequence[str], environ: Mapping[str, str], cwd: str) -> tuple[tuple[object, ...], str | None] | None:
    """The key a record of ``argv`` is kept under, and the ``--into`` value (left out of the key);
    None when the command line is not one a record is kept for."""
    words = list(argv)
    at = [i for i, word in enumerate(words) if word == "--into" or word.startswith("--into=")]
    if len(at) > 1 or "--" in words:
        return None
    into = None
    if at:
        i = at[0]
        if words[i] == "--into":
            if i + 1 >= len(words):
                return None
            into, words[i + 1] = words[i + 1], PLACEHOLDER
        else:
            into, words[i] = words[i][len("--into=") :], "--into=" + PLACEHOLDER
        if not plain(into):
            return None
    env = tuple(sorted((k, v) for k, v in environ.items() if k not in SHELL_VARIABLES and not k.startswith("UV_")))
    return (FORMAT, srcbuild.__version__, sys.executable, sys.hexversion, cwd, tuple(words), env), into


def record_path(environ: Mapping[str, str], keyed: tuple[object, ...]) -> str:
    data = repr(keyed).encode("utf-8", "surrogateescape")
    return os.path.join(hits_dir(environ), f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.marshal")


def _yours(st: os.stat_result) -> bool:
    """This user's, and nobody else may write it: a record says what to install."""
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _read(path: str) -> dict[str, object] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _yours(st) or st.st_size > 16 * 1024 * 1024:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        record = marshal.loads(b"".join(chunks))
    except (EOFError, ValueError, TypeError):
        return None
    return record if isinstance(record, dict) else None


def on_path(program: str, environ: Mapping[str, str]) -> str | None:
    """Where ``program`` is on ``PATH`` (the first executable file), as a process start finds it."""
    for folder in environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.access(candidate, os.X_OK) and os.path.isfile(candidate):
            return candidate
    return None


def _read_small(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(65536)
    except OSError:
        return None


def driver_state(environ: Mapping[str, str], root: str = DRIVER_DIR) -> tuple[object, ...]:
    """What says the driver's answer is still the one recorded: ``nvidia-smi``'s place and state,
    the kernel module's version text and each GPU's information text (by its bus id)."""
    smi = on_path("nvidia-smi", environ)
    if smi is None:
        return ("absent",)
    gpus_dir = os.path.join(root, "gpus")
    try:
        buses = sorted(os.listdir(gpus_dir))
        gpus = tuple((bus, _read_small(os.path.join(gpus_dir, bus, "information"))) for bus in buses)
    except OSError:
        gpus = ()
    return ("present", smi, state(smi), _read_small(os.path.join(root, "version")), gpus)


def _print(text: str, stream: TextIO, environ: Mapping[str, str]) -> None:
    """``text`` wrapped as ``srcbuild.console.echo_text`` wraps it (``srcbuild.wrapping``)."""
    from srcbuild.wrapping import output_width, wrap_text

    stream.write(wrap_text(text, output_width(stream, environ)))
    stream.flush()


def quote(word: str) -> str:
    """``word`` as ``shlex.quote`` writes it (without importing shlex, which imports re)."""
    safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-"
    if word and all(c in safe for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def uv_argv(uv: str, python: str, wheel: str) -> list[str]:
    """``uv pip install --python PY --no-deps --offline --no-config WHEEL``: the wheel whose state
    is the one uv accepted by its hash (the module's docstring)."""
    return [uv, "pip", "install", "--python", python, "--no-deps", "--offline", "--no-config", wheel]


def _run(argv: list[str], environ: Mapping[str, str]) -> int | None:
    """Run ``argv`` with its output kept apart (shown by nobody: the whole path runs it again on a
    failure and says why); its exit code, None when it cannot start."""
    try:
        out = os.open(environ.get("TMPDIR") or "/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
    except (OSError, AttributeError):
        return None
    try:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out, 1),
            (os.POSIX_SPAWN_DUP2, out, 2),
        ]
        try:
            pid = os.posix_spawn(argv[0], argv, dict(environ), file_actions=actions)
        except OSError:
            return None
        try:
            _, status = os.waitpid(pid, 0)
        except KeyboardInterrupt:  # uv was interrupted too (one process group): wait, then stop
            os.waitpid(pid, 0)
            raise
        return os.waitstatus_to_exitcode(status)
    finally:
        os.close(out)


def install_again(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Install the recorded hit ``argv`` asks for again; its exit code (0), or None when the whole
    command must run (no record holds, or uv failed)."""
    keyed = key(argv, environ, os.getcwd())
    if keyed is None:
        return None
    found = _read(record_path(environ, keyed[0]))
    if found is None or found.get("key") != keyed[0]:
        return None
    try:
        return _again(found, keyed[1], environ)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None  # a damaged record: the whole command decides


def _holds(paths: Iterable[tuple[str, State | None]]) -> bool:
    return all(state(path, listed=was is not None and len(was) > 1 and was[0] == "dir") == was for path, was in paths)


def _again(found: dict[str, object], into: str | None, environ: Mapping[str, str]) -> int | None:
    python = os.path.join(into, "bin", "python") if into is not None else found["python"]
    if not isinstance(python, str):
        return None
    real = os.path.realpath(python)  # a missing interpreter: its state is None, never the one recorded
    if found["interpreter"] != (real, state(real)) or found["host"] != _host():
        return None
    if found["driver"] != driver_state(environ):
        return None
    if not _holds(found["paths"]) or not _holds([found["wheel"], found["uv"]]):  # type: ignore[arg-type, list-item]
        return None
    wheel, uv = found["wheel"][0], found["uv"][0]  # type: ignore[index]
    argv = uv_argv(uv, python, wheel)
    if _run(argv, environ) != 0:
        return None
    sys.stderr.write("+ " + " ".join(quote(word) for word in argv) + "\n")
    sys.stderr.flush()
    said = found["said"]
    if said:
        _print(str(said), sys.stderr, environ)
    _print(str(found["done"]).replace(PLACEHOLDER, python), sys.stdout, environ)
    return 0


def _host() -> tuple[str, str]:
    """The C library and the machine: what the target interpreter's answer also depends on."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    return (libc or "", os.uname().machine)


def remember(
    argv: Sequence[str],
    environ: Mapping[str, str],
    trace: ReadTrace,
    *,
    into: str | None,
    python: str,
    answered: bool,
    wheel: str,
    wheel_state: State | None,
    uv: str,
    said: str,
    shown: str,
    done: str,
) -> bool:
    """Keep a record of the hit just installed (see the module's docstring); whether one was kept.

    ``into``: the ``--into`` value the command line parsed; ``python``: the target interpreter it
    resolved; ``answered``: whether a driver answered; ``wheel_state``: the wheel's state before the
    installer hashed it (unchanged since, it is the state of the bytes hashed); ``said``: the lines
    printed on stderr after the installer's, ``shown``: as they were written there (wrapped): stderr
    must hold nothing else but the installer's line; ``done``: the result line on stdout."""
    written = watched_stderr()
    if written is None:
        return False
    lines = written.splitlines(keepends=True)
    if sum(line.startswith("+ ") for line in lines) != 1 or "".join(
        line for line in lines if not line.startswith("+ ")
    ) != shown:
        return False  # something else was said (a warning): the record could not say it again
    keyed = key(argv, environ, os.getcwd())
    if keyed is None or keyed[1] != into or wheel_state is None or state(wheel) != wheel_state or trace.incomplete:
        return False
    if into is not None and python != os.path.join(into, "bin", "python"):
        return False  # a bin/python3 environment: the whole command decides each time
    prefix = os.path.abspath(into) if into is not None else None
    for program in trace.programs:
        if not program or program[0] not in (python, "nvidia-smi", uv):
            return False  # something else was asked: what it answers is not in the record
    driver = driver_state(environ)
    if answered and (driver[0] != "present" or driver[3] is None):
        return False
    if not answered and driver[0] != "absent":
        return False  # a nvidia-smi that did not answer: asked each time
    imports = {os.path.abspath(p) for p in sys.path if p} | {
        os.path.abspath(p) for m in list(sys.modules.values()) for p in getattr(m, "__path__", None) or ()
    }
    names = set(trace.opened) | set(trace.asked) | (set(trace.listed) - imports)
    modules = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    names |= {os.path.abspath(f) for f in modules if isinstance(f, str)}
    skipped = [os.path.abspath(os.path.join(user_cache(environ), name)) for name in DERIVED]
    if prefix is not None:
        skipped.append(prefix)  # the target's interpreter is compared apart; the rest is uv's to read
    paths = []
    for name in sorted(names):
        if name == os.devnull or trace.is_made(name) or any(name == s or name.startswith(s + "/") for s in skipped):
            continue
        if name.startswith(VOLATILE):
            return False
        paths.append((name, state(name, listed=name in trace.listed)))
    real = os.path.realpath(python)
    record = {
        "key": keyed[0],
        "python": python,
        "interpreter": (real, state(real)),
        "host": _host(),
        "driver": driver,
        "paths": tuple(paths),
        "wheel": (wheel, wheel_state),
        "uv": (uv, state(uv)),
        "said": said,
        "done": done.replace(python, PLACEHOLDER) if into is not None else done,
    }
    if into is not None and PLACEHOLDER not in record["done"]:
        return False
    return _write(record_path(environ, keyed[0]), marshal.dumps(record))


class WatchedStream:
    """A stream that writes through to another and keeps what was written (up to ``LIMIT``)."""

    LIMIT = 65536

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.text: list[str] = []
        self.size = 0

    def write(self, text: str) -> int:
        self.size += len(text)
        if self.size <= self.LIMIT:
            self.text.append(text)
        return self.stream.write(text)

    def written(self) -> str | None:
        """All that was written, or None when it was more than ``LIMIT``."""
        return "".join(self.text) if self.size <= self.LIMIT else None

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def watching_stderr() -> WatchedStream:
    """Watch what the command writes on stderr (``sys.stderr`` replaced for the rest of the process):
    a record is made only when that is the installer's line and the lines the record replays (a
    warning printed once, or every time, would otherwise be lost)."""
    watched = WatchedStream(sys.stderr)
    sys.stderr = watched
    return watched


def watched_stderr() -> str | None:
    """What the command wrote on stderr, when it is watched (``watching_stderr``)."""
    return sys.stderr.written() if isinstance(sys.stderr, WatchedStream) else None


def _write(path: str, data: bytes) -> bool:
    """``data`` at ``path``, whole or not at all (``srcbuild.files.write_atomic``: the whole command's
    path only); the oldest records beyond ``MAX_RECORDS`` go."""
    from pathlib import Path

    from srcbuild.files import write_atomic

    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        write_atomic(Path(path), data, mode=0o600)
        kept = sorted(
            (os.stat(os.path.join(folder, n)).st_mtime_ns, n) for n in os.listdir(folder) if n.endswith(".marshal")
        )
        for _, name in kept[:-MAX_RECORDS]:
            os.unlink(os.path.join(folder, name))
    except OSError:
        return False
    return True
