"""A Python of any version for running what srcbuild recommends or builds (``srcbuild env runtime``).

Where the machine has that Python (``python3.7`` on PATH), the runtime is a venv of it; otherwise
the embedded rattler backend solves ``python X.Y.*`` and ``pip`` from conda-forge (or its mirror,
``SRCBUILD_CHANNEL_MIRRORS``/``SRCBUILD_CHANNEL_ALIAS``) and installs them into the directory.
Either way the result has ``bin/python`` with pip, ready for a ``pip install`` line or for
``srcbuild install --into DIR``. The directory is made under a temporary name and renamed into
place, so a failure leaves nothing half-made.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from srcbuild import proc
from srcbuild.errors import EnvironmentError_, HostError, UsageError
from srcbuild.patterns import LazyPattern
from srcbuild.records import record

CHANNEL = "conda-forge"
_VERSION = LazyPattern(r"^3\.\d{1,2}$")
_INTERPRETER = LazyPattern(r"^python(3\.\d{1,2})$")


@record
class Runtime:
    """A Python made for running wheels: where it is, its version and how it was made."""

    prefix: Path
    version: str  # "3.7.12", as the interpreter reports it
    route: str  # "venv of /usr/bin/python3.7" or "conda-forge (rattler)"

    @property
    def python(self) -> Path:
        return self.prefix / "bin" / "python"

    def to_json(self) -> dict[str, str]:
        return {"prefix": str(self.prefix), "python": str(self.python), "version": self.version, "route": self.route}


def runtime_command(python: str, into: str) -> str:
    """The command that makes a Python ``python`` at ``into`` (for hints)."""
    return f"srcbuild env runtime --python {python} --into {into}"


def active_pythons(environ: Mapping[str, str]) -> frozenset[str]:
    """The Python versions of the active environment (``VIRTUAL_ENV``, else ``CONDA_PREFIX``):
    where a plain ``pip install`` goes; empty when none is active."""
    prefix = environ.get("VIRTUAL_ENV") or environ.get("CONDA_PREFIX")
    return pythons_here(os.path.join(prefix, "bin")) if prefix else frozenset()


def pythons_here(path: str | None) -> frozenset[str]:
    """The Python versions (``"3.11"``) with an interpreter ``python3.N`` in a directory of ``path``
    (a ``PATH`` value): what ``env runtime`` would make a venv of, and what a pip command runs with.

    Only an executable that is (or links to) an ELF file counts: a version manager's shim is a
    script that fails unless that version is selected, so it is not a Python of that version."""
    found: set[str] = set()
    for folder in (path or os.defpath).split(os.pathsep):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            m = _INTERPRETER.match(name)
            if m and m.group(1) not in found and _is_program(os.path.join(folder or ".", name)):
                found.add(m.group(1))
    return frozenset(found)


def _is_program(path: str) -> bool:
    """Whether ``path`` is an executable ELF file (after its links), not a script."""
    if not os.access(path, os.X_OK):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def check_version(python: str) -> str:
    if not _VERSION.match(python):
        raise UsageError(f"--python {python!r} is not a Python version like 3.7", "give MAJOR.MINOR, e.g. --python 3.7")
    return python


def make_runtime(
    python: str, into: Path, work_dir: Path, environ: Mapping[str, str], backend: str | None = None
) -> Runtime:
    """Make a Python ``python`` (``3.7``) at ``into``: a venv of the system's ``python3.7`` when there
    is one (and ``backend`` is not ``rattler``), else conda-forge's through rattler."""
    check_version(python)
    if into.exists() and any(into.iterdir()):
        if (into / "bin" / "python").exists():
            raise UsageError(
                f"{into} holds a Python already", f"use it as it is, or remove it first: rm -r {into}"
            )
        raise UsageError(f"{into} exists and is not empty", "give a new directory to --into")
    system = shutil.which(f"python{python}", path=environ.get("PATH"))
    if system is not None and proc.probe([system, "-c", "import venv"]) is None:
        system = None  # a shim or a broken install: not a Python of that version here
    from srcbuild.envs.backends import installs_conda_packages

    pip_only = backend is not None and not installs_conda_packages(backend)  # a venv of the system's Python
    if pip_only and system is None:
        raise HostError(f"python{python} is not installed here", "leave out --backend venv to make it with rattler")
    into.parent.mkdir(parents=True, exist_ok=True)
    tmp = into.with_name(f".{into.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        if system is not None and (backend is None or pip_only):
            route = f"venv of {system}"
            done = proc.run([system, "-m", "venv", str(tmp)])
            if not done.ok:
                last = next((line for line in reversed(done.tail) if line.strip()), "")
                raise EnvironmentError_(
                    f"{system} -m venv failed: {last}",
                    f"install its venv package (python{python}-venv), or: "
                    f"{runtime_command(python, str(into))} --backend rattler",
                )
        else:
            route = f"{CHANNEL} (rattler)"
            _from_conda(python, tmp, into, work_dir, environ)
        if into.exists():
            into.rmdir()  # empty, checked above
        tmp.rename(into)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    asked = [str(into / "bin" / "python"), "-c", "import platform; print(platform.python_version())"]
    version = (proc.probe(asked) or "").strip()
    return Runtime(into, version or python, route)


def _from_conda(python: str, target: Path, final: Path, work_dir: Path, environ: Mapping[str, str]) -> None:
    from srcbuild.envs.backends.rattler_backend import rattler_available
    from srcbuild.envs.channels import routing_from
    from srcbuild.envs.prefix_install import solve_and_install

    if not rattler_available():
        raise HostError(
            f"python{python} is not installed here and the embedded backend (py-rattler) is missing",
            f"install python{python} with your package manager, or install py-rattler (Python >= 3.10)",
        )
    url = routing_from(environ=environ).base_url(CHANNEL)
    try:
        solve_and_install([f"python {python}.*", "pip"], [url], target, final, work_dir / "conda", CHANNEL)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise EnvironmentError_(
            f"making Python {python} from {url} failed: {first}",
            "check the network or set SRCBUILD_CHANNEL_MIRRORS=conda-forge=URL to a mirror of the channel",
        ) from None
