"""The venv backend: the host's own Python (``python -m venv``) plus pip, for specs pip can satisfy.

Usable when the recipe's Python is the interpreter running srcbuild and every conda package of the
spec has a pip equivalent. A venv's scripts hard-code their prefix, so it is made in its final
place; the marker, written last, still keeps a half-made venv from ever being used.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from srcbuild.command import Command
from srcbuild.envs.backends.base import CommandIO, pip_command, run_checked
from srcbuild.envs.prefix import BuildEnv, EnvStore, env_changes_for
from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import MirrorMissing, UsageError


def host_python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def venv_unsuitable(spec: EnvSpec) -> str | None:
    """Why a venv cannot hold this spec, or None when it can."""
    if spec.python != host_python_version():
        return f"the recipe needs Python {spec.python} and srcbuild runs on Python {host_python_version()}"
    if spec.conda_only:
        return f"pip cannot provide {', '.join(spec.conda_only)}"
    return None


class VenvBackend:
    name = "venv"
    conda_packages = False  # pip packages only, into a venv of the host's Python

    def commands(self, spec: EnvSpec, prefix: Path) -> list[Command]:
        pip_spec = spec.as_pip_only()
        out = [Command((sys.executable, "-m", "venv", str(prefix)), why="create a venv from the host Python")]
        if pip_spec.pip:
            out.append(pip_command(prefix / "bin" / "python", pip_spec.pip))
        return out

    def describe(self, spec: EnvSpec, prefix: Path, lockfile: Path | None) -> list[str]:
        lines = [f"{c.why}: {c.shell()}" for c in self.commands(spec, prefix)]
        if lockfile is not None and lockfile.is_file():
            lines.append(f"(the conda lockfile {lockfile} does not apply to a venv)")
        return lines

    def ensure(
        self, spec: EnvSpec, envs_dir: Path, lockfile: Path | None, log_path: Path | None, io: CommandIO
    ) -> BuildEnv:
        why = venv_unsuitable(spec)
        if why is not None:
            raise UsageError(f"the venv backend cannot make this environment: {why}", "use --env-backend rattler")
        started = time.monotonic()
        pip_spec = spec.as_pip_only()
        store = EnvStore(Path(envs_dir))
        key = "venv-" + pip_spec.key

        def create(target: Path, final: Path) -> None:
            for command in self.commands(spec, final):
                try:
                    run_checked(
                        command, log_path, "pip install" if "pip" in command.argv[1:3] else "python -m venv", io
                    )
                except MirrorMissing as exc:  # a venv takes every package from pip: a mirror made for one
                    exc.details["create_options"] = ["--env-backend", "venv"]
                    raise

        prefix, reused = store.ensure(
            key,
            pip_spec.hash(),
            create,
            relocatable=False,
            marker_extra={"backend": self.name, "spec": pip_spec.canonical()},
        )
        return BuildEnv(
            prefix=prefix,
            python=prefix / "bin" / "python",
            bin_dir=prefix / "bin",
            env_changes=env_changes_for(prefix, "venv", with_compiler=False),
            backend=self.name,
            spec_hash=pip_spec.hash(),
            reused=reused,
            seconds=time.monotonic() - started,
        )
