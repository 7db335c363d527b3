"""The interpreter an install goes into (``target_python``), and its pip started before it is known
to be needed: ``srcbuild install`` lets the target's pip load itself (about a third of a second of
imports for ``pip install``) while the cache lookup and the fit check decide whether anything is
installed at all. Light on purpose: the install command starts pip before it imports the cache.

The target interpreter runs ``-c WAIT_THEN_PIP``: it imports what ``pip install`` imports (each module
that this pip has; pip's own names, so another pip version only loads less ahead), asks the
``distro`` library pip carries what pip's user-agent string will ask it (distro runs ``lsb_release``
and ``uname`` for that once and keeps the answers, so they run during the wait), waits
for one line (pip's arguments as a JSON list) and then runs pip exactly as ``python -m pip ARGS``
would (``runpy``, as ``-m`` does, with its input from /dev/null as ``proc.run`` gives it). A closed
input ends it without doing anything. What srcbuild echoes is that plain ``python -m pip ...``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from srcbuild import proc
from srcbuild.errors import UsageError

WAIT_THEN_PIP = """\
import importlib, sys
for name in (
    "pip._internal.cli.main", "pip._internal.commands.install", "pip._internal.metadata",
    "pip._internal.resolution.resolvelib.resolver", "pip._vendor.pkg_resources",
):
    try:
        importlib.import_module(name)
    except Exception:
        pass
import os
try:  # what pip's user-agent asks distro (lsb_release, uname: process starts), which distro remembers
    from pip._vendor import distro
    saved = os.dup(0)  # the line arrives there: those programs read /dev/null, as they do under pip
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        distro.name(), distro.version(), distro.codename()
    finally:
        os.dup2(saved, 0)
        os.close(saved)
except Exception:
    pass
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
import importlib.util, json, runpy
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
if importlib.util.find_spec("pip") is None:
    sys.exit(sys.executable + ": No module named pip")
sys.argv = ["pip", *json.loads(line)]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
"""


def target_python(
    into: str | None, python: str | None, environ: Mapping[str, str], version: str | None = None
) -> Path:
    """The interpreter to install into: ``--python``, ``--into PREFIX``, the active venv/conda env, else python3.

    ``version`` (the recipe's ``toolchain.python``) names the interpreter the hint suggests."""
    if python:
        return Path(python)
    prefix = into or environ.get("VIRTUAL_ENV") or environ.get("CONDA_PREFIX")
    if prefix:
        for candidate in (Path(prefix) / "bin" / "python", Path(prefix) / "bin" / "python3"):
            if candidate.exists():
                return candidate
        raise UsageError(
            f"{prefix} is not a Python environment (no bin/python)",
            f"make one with Python {version or '3'}: srcbuild env runtime --python {version or '3'} "
            f"--into {shlex.quote(str(prefix))} (or add --create to this command); or pass --python",
        )
    path = environ.get("PATH", os.defpath)
    found = shutil.which("python3", path=path) or shutil.which("python", path=path) or sys.executable
    return Path(found)


def start_pip(python: Path) -> proc.Waiting | None:
    """The target's pip, loading itself and waiting; None when the interpreter cannot be started
    (the fit check then says why)."""
    if python.is_absolute() and not python.exists():  # nothing to start: the fit check says so
        return None
    try:
        return proc.Waiting([str(python), "-c", WAIT_THEN_PIP])
    except OSError:
        return None


def run_pip(waiting: proc.Waiting, argv: Sequence[str], echo: IO[str] | None = None) -> proc.RunResult:
    """Run ``argv`` (``PY -m pip ARGS...``) on the waiting pip; echoes ``argv`` itself."""
    if list(argv[1:3]) != ["-m", "pip"]:
        raise ValueError(f"not a `python -m pip` command: {proc.format_argv(argv)}")
    return waiting.go(json.dumps(list(argv[3:])), argv, echo)
