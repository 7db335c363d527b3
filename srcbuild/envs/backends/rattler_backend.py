"""The embedded backend: py-rattler solves and installs conda packages, no conda needed.

Creation: solve the spec (or read the lockfile: exact URLs and hashes, no solve), fetch every
package and check its sha256/md5, install them into a temp dir as if it were the final prefix
(rattler's ``alternative_target_prefix``, so prefix placeholders get the final path), rename it into
place, pip-install the spec's pip packages, then write the marker.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO

from srcbuild.envs.backends.base import CommandIO, pip_command, run_checked
from srcbuild.envs.fetch import fetch_verified
from srcbuild.envs.lockfile import LockedPackage, check_current, packages_digest, read_lockfile
from srcbuild.envs.prefix import BuildEnv, EnvStore
from srcbuild.envs.solve import log_line, solve_spec
from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import EnvironmentError_, HostError


def rattler_available() -> bool:
    """Whether py-rattler is installed: looked up, not imported (its native runtime takes a tenth
    of a second to load, and a build that uses a venv or conda never needs it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("rattler") is not None
    except (ImportError, ValueError):
        return False


class RattlerBackend:
    name = "rattler"
    conda_packages = True

    def describe(self, spec: EnvSpec, prefix: Path, lockfile: Path | None) -> list[str]:
        channels = ", ".join(spec.routing.route(c) for c in spec.channels)
        lines = []
        if lockfile is not None and lockfile.is_file():
            lines.append(f"install the exact packages of {lockfile} (no solve; sha256 and md5 checked)")
        else:
            lines.append(f"solve {' '.join(repr(s) for s in spec.conda_specs)} for {spec.platform} from {channels}")
            lines.append("fetch every package and check its sha256 and md5")
        lines.append(f"install with the embedded installer (py-rattler) into a temp dir, then rename to {prefix}")
        if spec.pip:
            lines.append(f"pip install {' '.join(spec.pip)} with {prefix}/bin/python")
        lines.append(f"reuse {prefix} untouched while its spec hash is {spec.key}")
        return lines

    def ensure(
        self, spec: EnvSpec, envs_dir: Path, lockfile: Path | None, log_path: Path | None, io: CommandIO
    ) -> BuildEnv:
        if not rattler_available():
            raise HostError(
                "the embedded environment backend needs py-rattler, which is not installed for this Python",
                "install py-rattler (Python >= 3.10), or install conda, mamba or micromamba",
            )
        started = time.monotonic()
        store = EnvStore(Path(envs_dir))
        locked: list[LockedPackage] | None = None
        if lockfile is not None and lockfile.is_file():
            lock = read_lockfile(lockfile)
            check_current(lock, lockfile, spec.hash(), _recipe_name(lockfile))
            locked = list(lock.packages)

        def create(target: Path, final: Path) -> dict[str, str]:
            if locked is not None:
                assert lockfile is not None
                log_line(log_path, f"installing from lockfile {lockfile} ({len(locked)} packages, no solve)")
                packages, recorded_by = locked, f"the lockfile {lockfile.name}"
            else:
                packages, recorded_by = solve_spec(spec, store.repodata_cache, log_path), "the channel index"
            install_packages(packages, spec, store, target, final, log_path, recorded_by, io.echo)
            return {"packages": packages_digest(packages)}

        def finish(final: Path) -> None:
            if spec.pip:
                run_checked(pip_command(final / "bin" / "python", spec.pip), log_path, "pip install", io)

        prefix, reused = store.ensure(
            spec.key,
            spec.hash(),
            create,
            finish,
            relocatable=True,
            marker_extra={
                "backend": self.name,
                "spec": spec.canonical(),
                "lockfile": str(lockfile) if locked else None,
            },
            must_match={"packages": packages_digest(locked)} if locked is not None else None,
        )
        return BuildEnv.conda_prefix(prefix, self.name, spec.hash(), spec.wants_conda_compiler, reused, started)


def _recipe_name(lockfile: Path) -> str:
    return lockfile.name.removesuffix(".conda-lock.yml")


def _channel_of(url: str, spec: EnvSpec) -> str:
    for channel in spec.channels:
        base = spec.routing.base_url(channel)
        if url.startswith(base):
            return base
    return url.rsplit("/", 2)[0] + "/"


def install_packages(
    packages: list[LockedPackage],
    spec: EnvSpec,
    store: EnvStore,
    target: Path,
    final: Path,
    log_path: Path | None,
    recorded_by: str = "the lockfile",
    echo: IO[str] | None = None,
) -> None:
    """Fetch and verify every package, then let rattler link them into ``target`` (as ``final``)."""
    import rattler
    from rattler import RepoDataRecord

    missing = [p.label for p in packages if not p.sha256 and not p.md5]
    if missing:
        raise EnvironmentError_(
            f"no hash recorded for {', '.join(missing)}", "re-run `srcbuild lock` so every package carries its hashes"
        )
    local = []
    for package in packages:
        url = spec.routing.route_url(package.url, spec.channels)
        local.append((package, url, fetch_verified(package, url, store.downloads, recorded_by, echo)))

    async def run() -> None:
        records = []
        for _package, url, path in local:
            from_archive = await RepoDataRecord.from_package_archive(path)
            records.append(RepoDataRecord(from_archive, path.name, path.resolve().as_uri(), _channel_of(url, spec)))
        await rattler.install(
            records,
            target_prefix=target,
            cache_dir=store.package_cache,
            alternative_target_prefix=final,
            execute_link_scripts=True,
            show_progress=False,
        )

    try:
        import asyncio  # only when solving: the event loop costs every command 10 ms to import
        asyncio.run(run())
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        log_line(log_path, f"install failed: {type(exc).__name__}: {exc}")
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EnvironmentError_(
            f"installing the environment into {final} failed: {first}",
            f"see {log_path} for details" if log_path else "rerun with --debug for details",
        ) from None
    log_line(log_path, f"installed {len(packages)} packages into {final}")
