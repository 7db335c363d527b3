"""The interface every environment backend implements, and the pip step they share.

A backend turns an ``EnvSpec`` into a ready ``BuildEnv``: ``describe`` says exactly what it would do
(for ``srcbuild plan``), ``ensure`` does it (or reuses the complete environment already there).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import IO, Protocol

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.envs.prefix import BuildEnv
from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import EnvironmentError_, HostError, MirrorMissing
from srcbuild.offline import DIR_VAR, missing_requirement
from srcbuild.precedence import env_value
from srcbuild.records import record


@record
class CommandIO:
    """What a backend's commands run with: the caller's environment and where ``+ cmd`` lines go
    (the build's console, or stderr for ``srcbuild env create``). Passed down, never read from
    ``os.environ`` here."""

    environ: Mapping[str, str]
    echo: IO[str] | None = None


class EnvBackend(Protocol):
    name: str
    # what it can do, asked instead of its name: True when it installs the spec's conda packages
    # from its channels; False when it installs the pip packages alone, into a venv of a host Python
    conda_packages: bool

    def describe(self, spec: EnvSpec, prefix: Path, lockfile: Path | None) -> list[str]: ...

    def ensure(
        self, spec: EnvSpec, envs_dir: Path, lockfile: Path | None, log_path: Path | None, io: CommandIO
    ) -> BuildEnv: ...


def pip_command(python: Path, requirements: tuple[str, ...]) -> Command:
    """``python -m pip install`` of the spec's pip packages (pip's own config and PIP_* apply)."""
    return Command(
        argv=(str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check", *requirements),
        why="install the pip packages of the build environment",
    )


def run_checked(command: Command, log_path: Path | None, what: str, io: CommandIO) -> None:
    """Run a planned command; a failure is an EnvironmentError_ quoting its last line."""
    env = command.env.apply(io.environ)
    try:
        result = proc.run(command.argv, cwd=command.cwd, env=env, log_path=log_path, echo=io.echo)
    except FileNotFoundError:
        raise HostError(f"{command.argv[0]} is not installed", "install it, or choose another backend") from None
    if not result.ok:
        mirror_dir = env_value(io.environ, DIR_VAR)
        lacking = missing_requirement(result.tail) if mirror_dir else None
        if lacking is not None:
            raise MirrorMissing(
                f"{what}: the pip package {lacking} is not in the mirror {mirror_dir}'s package index",
                f"add it on a connected machine: srcbuild mirror create {mirror_dir} --recipe RECIPE",
            )
        last = next((line for line in reversed(result.tail) if line.strip()), "no output")
        where = f"; full output in {log_path}" if log_path else ""
        raise EnvironmentError_(
            f"{what} failed (exit {result.returncode}): {last.strip()}",
            f"fix the package named above in the recipe's [env] table{where}",
        )
