"""Every error srcbuild reports to a user: one class per kind, each owning its exit code.

An error carries a one-line ``message`` (what is wrong, naming the file, field or step) and an
optional ``hint`` (what to do next). Only the CLI entry point catches these; ``--debug`` shows
the traceback as well. ``details`` (JSON-ready) go into the ``--json`` error object.

The exit codes are a contract, the same for every command (README.md shows this table):

    2  a bad recipe or a command-line/setting that cannot be used   UsageError, RecipeError
    3  incompatible pins (the compatibility rules said no)           IncompatibleError
    4  a tool or resource missing on this machine                    HostError
    5  a build step failed                                           StepFailed
    6  verification failed                                           VerificationFailed
    7  cache or source integrity                                     CacheIntegrityError, SourceMismatch
    8  the build environment                                         EnvironmentError_
    9  nothing found: no cached wheel, an unreachable remote         NotFoundError
  130  interrupted (resumable)                                       Interrupted
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class SrcbuildError(Exception):
    """Base class: a failure srcbuild can explain in words."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = dict(details or {})

    def __str__(self) -> str:
        return self.message


class UsageError(SrcbuildError):
    """A command-line argument or an environment setting that cannot be used."""

    exit_code = 2


class RecipeError(SrcbuildError):
    """A recipe file that cannot be read, parsed or validated."""

    exit_code = 2


class IncompatibleError(SrcbuildError):
    """A recipe whose pins upstream does not support (the compatibility rules said no)."""

    exit_code = 3


class HostError(SrcbuildError):
    """This machine lacks something the build needs (a tool, a version, disk or memory)."""

    exit_code = 4


class DiskFull(HostError):
    """A filesystem srcbuild writes to is full (or over quota): the filesystem is named, never the peer."""


FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def filesystem_of(path: Path) -> Path:
    """The mount point holding ``path`` (its nearest existing ancestor's)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def disk_full(exc: OSError, path: Path) -> DiskFull | None:
    """The DiskFull error for ``exc`` when it says a filesystem is full, naming the one holding ``path``."""
    if exc.errno not in FULL_ERRNOS:
        return None
    mount = filesystem_of(path)
    return DiskFull(
        f"the filesystem at {mount} is full ({exc.strerror}) while writing {path}",
        f"free space there (`df -h {mount}` shows it; `srcbuild cache gc --max-size SIZE` trims a cache), "
        "then run the command again",
    )


class MirrorMissing(HostError):
    """A command told to take every download from a mirror directory found a piece it lacks."""


class StepFailed(SrcbuildError):
    """A build step ran and failed."""

    exit_code = 5


class VerificationFailed(SrcbuildError):
    """A wheel does not hold what the recipe asked for."""

    exit_code = 6


class CacheIntegrityError(SrcbuildError):
    """A cached or transferred wheel whose content does not match its recorded hash."""

    exit_code = 7


class SourceMismatch(SrcbuildError):
    """A source that is not the one pinned: a tag naming another commit than the recipe pins or
    than it named when first seen here, a mirror file that differs from the mirror's manifest."""

    exit_code = 7


class PushConflict(CacheIntegrityError):
    """A push whose entry the remote already holds with other bytes (exit 7): the shared copy is
    never replaced; ``cache push`` reports it and goes on with the next entry."""


class EnvironmentError_(SrcbuildError):
    """A build environment that cannot be created or solved."""

    exit_code = 8


class NotFoundError(SrcbuildError):
    """Nothing to act on: no cached wheel for the request, or a remote that cannot be reached."""

    exit_code = 9


class Interrupted(SrcbuildError):
    """The user pressed Ctrl-C; the state on disk can be resumed."""

    exit_code = 130
