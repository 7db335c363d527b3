"""Every error srcbuild reports to a user: one class per kind, each owning its exit code.

An error carries a one-line ``message`` (what is wrong, naming the file, field or step) and an
optional ``hint`` (what to do next). Only the CLI entry point catches these; ``--debug`` shows
the traceback as well.
"""

from __future__ import annotations


class SrcbuildError(Exception):
    """Base class: a failure srcbuild can explain in words."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

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


class StepFailed(SrcbuildError):
    """A build step ran and failed."""

    exit_code = 5


class VerificationFailed(SrcbuildError):
    """A wheel does not hold what the recipe asked for."""

    exit_code = 6


class CacheIntegrityError(SrcbuildError):
    """A cached or transferred wheel whose content does not match its recorded hash."""

    exit_code = 7


class EnvironmentError_(SrcbuildError):
    """A build environment that cannot be created or solved."""

    exit_code = 8


class Interrupted(SrcbuildError):
    """The user pressed Ctrl-C; the state on disk can be resumed."""

    exit_code = 130
