"""conda, mamba and micromamba: when one is installed, srcbuild drives it with exact command lines.

With a lockfile the packages are installed from an ``@EXPLICIT`` list of routed ``url#md5`` lines
(no solve); otherwise the tool solves ``python X.Y.*`` plus the spec's packages from the spec's
channels only (``--override-channels``). These tools cannot install into one directory as if it
were another, so the environment is made in its final place; the marker, written last, keeps a
half-made one from being used.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from srcbuild.command import Command
from srcbuild.envs.backends.base import CommandIO, pip_command, run_checked
from srcbuild.envs.lockfile import check_current, packages_digest, read_lockfile
from srcbuild.envs.prefix import BuildEnv, EnvStore
from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import HostError


class CondaFamilyBackend:
    """One of conda / mamba / micromamba, found on PATH as ``executable``."""

    conda_packages = True

    def __init__(self, name: str, executable: str | None = None) -> None:
        self.name = name
        self.executable = executable or name

    def explicit_file(self, prefix: Path) -> Path:
        return prefix.parent / f".{prefix.name}.explicit.txt"

    def create_command(self, spec: EnvSpec, prefix: Path, lockfile: Path | None) -> Command:
        if lockfile is not None and lockfile.is_file():
            return Command(
                (self.executable, "create", "-y", "-p", str(prefix), "--file", str(self.explicit_file(prefix))),
                why=f"install the exact packages of {lockfile} (no solve; md5 checked by {self.name})",
            )
        argv = [self.executable, "create", "-y", "-p", str(prefix), "--override-channels"]
        for channel in spec.channels:
            argv += ["-c", spec.routing.route(channel)]
        argv += list(spec.conda_specs)
        return Command(tuple(argv), why=f"solve and install the build environment with {self.name}")

    def commands(self, spec: EnvSpec, prefix: Path, lockfile: Path | None) -> list[Command]:
        out = [self.create_command(spec, prefix, lockfile)]
        if spec.pip:
            out.append(pip_command(prefix / "bin" / "python", spec.pip))
        return out

    def explicit_lines(self, spec: EnvSpec, lockfile: Path) -> list[str]:
        lock = read_lockfile(lockfile)
        check_current(lock, lockfile, spec.hash(), lockfile.name.removesuffix(".conda-lock.yml"))
        return lock.explicit_lines(lambda url: spec.routing.route_url(url, spec.channels))

    def describe(self, spec: EnvSpec, prefix: Path, lockfile: Path | None) -> list[str]:
        lines = []
        if lockfile is not None and lockfile.is_file():
            lines.append(f"write {self.explicit_file(prefix)} (@EXPLICIT url#md5 lines from {lockfile})")
        lines += [f"{c.why}: {c.shell()}" for c in self.commands(spec, prefix, lockfile)]
        lines.append(f"reuse {prefix} untouched while its spec hash is {spec.key}")
        return lines

    def ensure(
        self, spec: EnvSpec, envs_dir: Path, lockfile: Path | None, log_path: Path | None, io: CommandIO
    ) -> BuildEnv:
        found = shutil.which(self.executable, path=io.environ.get("PATH", ""))
        if found is None and not Path(self.executable).is_file():
            raise HostError(f"{self.name} is not on PATH", "install it, or use --env-backend rattler")
        started = time.monotonic()
        store = EnvStore(Path(envs_dir))

        locked = None
        if lockfile is not None and lockfile.is_file():
            lock = read_lockfile(lockfile)
            check_current(lock, lockfile, spec.hash(), lockfile.name.removesuffix(".conda-lock.yml"))
            locked = packages_digest(lock.packages)

        def create(target: Path, final: Path) -> dict[str, str]:
            explicit = self.explicit_file(final)
            if locked is not None:
                assert lockfile is not None
                explicit.write_text("\n".join(self.explicit_lines(spec, lockfile)) + "\n", encoding="utf-8")
            try:
                for command in self.commands(spec, final, lockfile):
                    run_checked(command, log_path, f"{Path(command.argv[0]).name} {command.argv[1]}", io)
            finally:
                explicit.unlink(missing_ok=True)
            return {"packages": locked} if locked is not None else {}

        prefix, reused = store.ensure(
            spec.key,
            spec.hash(),
            create,
            relocatable=False,
            marker_extra={"backend": self.name, "spec": spec.canonical()},
            must_match={"packages": locked} if locked is not None else None,
        )
        return BuildEnv.conda_prefix(prefix, self.name, spec.hash(), spec.wants_conda_compiler, reused, started)
