"""Which program puts a cached wheel into the target environment: uv, else the target's own pip.

srcbuild depends on uv (the ``uv`` wheel on the package index carries its binary): installing a
wheel that is already on disk costs uv about a tenth of pip's CPU, and a repeat of the same wheel
is a link from uv's cache. It is a dependency rather than something used when present because a
cache hit is what most users of a lab's shared cache run, and they should get that speed without
knowing about it; the binary is a static executable that needs nothing from the target, so it
installs into any environment srcbuild can point at (``--python``), pip or no pip in it.

The wheel alone goes in uv's hash-checking mode (``--require-hashes``, the manifest's sha256 as
``--hash``), offline and without reading any uv configuration file of the working directory
(``--offline --no-config``): uv hashes the file before installing it, so a wheel changed on disk
since the lookup is refused, never installed (exit 7). A wheel's dependencies are still resolved
by the target's pip, from the index pip is configured with (uv does not read pip's configuration).

``SRCBUILD_INSTALLER`` (config key ``installer``) picks: ``auto`` (the default: uv when its binary
is found beside srcbuild's interpreter or on PATH, else pip), ``uv`` (an error when it is not
found) or ``pip`` (pip in its hash-checking mode, as before uv).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from srcbuild.errors import UsageError
from srcbuild.precedence import env_value

CHOICES = ("auto", "uv", "pip")


def uv_binary(environ: Mapping[str, str]) -> str | None:
    """The uv executable a hit installs with; None: the target's pip (``SRCBUILD_INSTALLER``)."""
    choice = (env_value(environ, "SRCBUILD_INSTALLER") or "auto").strip().lower()
    if choice not in CHOICES:
        raise UsageError(
            f"SRCBUILD_INSTALLER={choice!r} is not one of {', '.join(CHOICES)}",
            "set it to auto (uv when found, else pip), uv or pip",
        )
    if choice == "pip":
        return None
    found = _find_uv(environ)
    if found is None and choice == "uv":
        raise UsageError(
            "SRCBUILD_INSTALLER=uv, but no uv executable was found beside srcbuild or on PATH",
            "reinstall srcbuild (uv is one of its dependencies), or set SRCBUILD_INSTALLER=pip",
        )
    return found


def _find_uv(environ: Mapping[str, str]) -> str | None:
    try:
        from uv import find_uv_bin  # the uv wheel's own finder: srcbuild's environment first

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv", path=environ.get("PATH"))


def hashed_uv_requirement(package: str, sha256: str, wheel: Path) -> str:
    """The requirements-file line for uv: the wheel by its file URL, pinned with ``--hash`` (uv
    takes no ``#sha256=`` fragment on a file URL)."""
    return f"{package} @ {wheel.resolve().as_uri()} --hash=sha256:{sha256}\n"


def uv_install_argv(uv: str, python: Path, requirements: Path) -> list[str]:
    """``uv pip install --python PY --no-deps --require-hashes --offline --no-config -r REQ``."""
    return [
        uv, "pip", "install", "--python", str(python), "--no-deps", "--require-hashes", "--offline", "--no-config",
        "-r", str(requirements),
    ]  # fmt: skip


def uv_hash_mismatch(lines: tuple[str, ...]) -> int | None:
    """The index of uv's hash-mismatch report in its output, if it made one."""
    found = [i for i, line in enumerate(lines) if "Hash mismatch" in line]
    return found[0] if found else None
