"""``srcbuild install``: find the recipe's wheel (local store, then remotes), check it fits, pip it in.

The flow: resolve the request fingerprint (no git, compiler or network), look in the local store
(whose lookup checks the wheel against its manifest), then in each remote in order (pulling a hit
into the local store when a trusted signer vouches for it, verified by sha256; a remote that
fails is a warning), re-hash the wheel, check it fits the target (``fit``), and run the target's
``python -m pip install <wheel>`` (its dependencies from pip's index) through ``srcbuild.proc``. A miss is an error that
names the build command; nothing is built here.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srcbuild import proc
from srcbuild.cache.fit import Machine, Target, check_fit, fits, probe_target
from srcbuild.cache.key import build_fingerprint
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes import CacheRemote
from srcbuild.cache.signing import TrustPolicy
from srcbuild.cache.store import CacheEntry, Warn, WheelCache, warn_stderr
from srcbuild.cache.transfer import fetch_first, find_remote_entry
from srcbuild.errors import IncompatibleError, NotFoundError, SrcbuildError, StepFailed, UsageError
from srcbuild.findings import Finding, Severity, has_errors
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.recipe.catalog import recipe_argument


def request_fingerprint(
    recipe: Recipe, package: str, environ: Mapping[str, str], platform_tag: str | None = None
) -> str:
    """The fingerprint a build of ``package`` for ``recipe`` stores its wheel under: the same
    ``build_fingerprint`` of the same resolve, with no host probe (no host fact but the platform
    enters the key; of ``environ``, only the settings ``resolve_unprobed`` names)."""
    from srcbuild.resolve.resolver import resolve_unprobed

    return build_fingerprint(resolve_unprobed(recipe, package, platform_tag, environ))


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


@dataclass(frozen=True)
class Found:
    """A wheel ready to install, and where it came from ("local" or a remote URL)."""

    entry: CacheEntry
    origin: str


def find_wheel(
    cache: WheelCache,
    recipe: Recipe,
    package: str,
    remotes: Sequence[CacheRemote],
    fp: str | None = None,
    trust: TrustPolicy | None = None,
    warn: Warn | None = warn_stderr,
    refused: list[SrcbuildError] | None = None,
    allow_modified: bool = False,
    machine: Machine | None = None,
    *,
    environ: Mapping[str, str],
) -> Found | None:
    """The local hit, else the first acceptable remote hit pulled into ``cache``; None on a miss.

    ``trust`` decides which remote entries are accepted (default: signed by a trusted signer).
    A damaged local entry, an unreachable remote or a refused entry is a warning, never an abort.
    Entries built from modified sources are found only with ``allow_modified``; of the others,
    the newest whose glibc ``machine`` (default: this one, ``Machine.host``) has.
    """
    target = machine or Machine.host(environ)

    def fits_target(manifest: Manifest) -> bool:
        return fits(manifest, target)

    fp = fp or request_fingerprint(recipe, package, environ)
    requested = list(recipe.gpu.arch) if recipe.toolchain.cuda else []
    entry = cache.lookup(fp, requested, warn, allow_modified, fits_target)
    if entry is not None:
        return Found(entry, "local")
    if not remotes:
        return None
    policy = trust or TrustPolicy.resolve(environ=environ)
    pulled = fetch_first(cache, remotes, fp, requested, policy, warn, refused, allow_modified, fits_target)
    if pulled is None:
        return None
    return Found(pulled[0], pulled[1].url)


@dataclass(frozen=True)
class InstallResult:
    """What ``srcbuild install`` did."""

    package: str
    recipe: str
    fingerprint: str
    wheel: Path
    origin: str
    python: Path
    findings: tuple[Finding, ...]
    installed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "recipe": self.recipe,
            "fingerprint": self.fingerprint,
            "wheel": str(self.wheel),
            "origin": self.origin,
            "python": str(self.python),
            "findings": [f.to_json() for f in self.findings],
            "installed": self.installed,
        }


@dataclass(frozen=True)
class PipOptions:
    """How ``install`` runs pip: with the wheel's dependencies (pip resolves them from its usual
    index, or ``index_url``/``extra_index_urls``) unless ``no_deps``; ``allow_modified`` lets an
    entry built from modified sources be installed."""

    no_deps: bool = False
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    allow_modified: bool = False


def pip_install_argv(python: Path, wheel: Path, options: PipOptions) -> list[str]:
    """``PY -m pip install [--no-deps] [--index-url U] ... WHEEL``."""
    argv = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    if options.no_deps:
        argv.append("--no-deps")
    if options.index_url:
        argv += ["--index-url", options.index_url]
    for url in options.extra_index_urls:
        argv += ["--extra-index-url", url]
    return [*argv, str(wheel)]


def miss_error(
    recipe: Recipe, package: str, fp: str, cache: WheelCache, remotes: Sequence[CacheRemote], environ: Mapping[str, str]
) -> SrcbuildError:
    where = str(cache.root) + "".join(f", {r.url}" for r in remotes)
    named = recipe_argument(recipe, Paths.resolve(environ=environ))
    return NotFoundError(
        f"no cached wheel for {package} of recipe {recipe.name} (fingerprint {fp[:12]}) in {where}",
        f"run `srcbuild {package} --recipe {named}` to build it (the result is cached), "
        "or add the remote that has it with --remote",
    )


def peek_wheel(
    cache: WheelCache,
    recipe: Recipe,
    package: str,
    remotes: Sequence[CacheRemote],
    fp: str,
    trust: TrustPolicy | None = None,
    warn: Warn | None = warn_stderr,
    allow_modified: bool = False,
    machine: Machine | None = None,
    *,
    environ: Mapping[str, str],
) -> tuple[Manifest, Path, str]:
    """The wheel ``install`` would use, without downloading it: a local entry (re-hashed), else
    the first remote hit whose manifest and signature the trust policy accepts (the same
    choice as ``find_wheel``: modified entries only when allowed, the newest ``machine`` runs)."""
    target = machine or Machine.host(environ)

    def fits_target(manifest: Manifest) -> bool:
        return fits(manifest, target)

    requested = list(recipe.gpu.arch) if recipe.toolchain.cuda else []
    entry = cache.lookup(fp, requested, warn, allow_modified, fits_target)
    if entry is not None:
        entry.check()
        return entry.manifest, entry.wheel_path, "local"
    hit = find_remote_entry(remotes, fp, requested, warn, allow_modified, fits_target)
    if hit is None:
        raise miss_error(recipe, package, fp, cache, remotes, environ)
    remote, manifest = hit
    with cache.staging("peek-") as work:
        (trust or TrustPolicy.resolve(environ=environ)).check(
            manifest, remote.signature(manifest), work, f"{manifest.wheel} from {remote.url}"
        )
    return manifest, Path(manifest.wheel), remote.url


def install(
    cache: WheelCache,
    recipe: Recipe,
    package: str,
    remotes: Sequence[CacheRemote],
    python: Path,
    echo: Any = None,
    dry_run: bool = False,
    trust: TrustPolicy | None = None,
    warn: Warn | None = warn_stderr,
    options: PipOptions | None = None,
    *,
    environ: Mapping[str, str],
) -> InstallResult:
    """Find, check and install the wheel; raises on a miss, a misfit or a failed pip."""
    options = options or PipOptions()
    fp = request_fingerprint(recipe, package, environ)
    target = probe_target(python)
    if target is None:
        raise UsageError(f"{python} does not run", "pass a working interpreter with --python or --into PREFIX")
    machine = Machine.host(environ) if environ.get("SRCBUILD_MACHINE_FILE") else Machine(target.machine, target.glibc)
    if dry_run:  # find and check, but download nothing: a remote hit is judged by its signed manifest
        manifest, wheel_path, origin = peek_wheel(
            cache, recipe, package, remotes, fp, trust, warn, options.allow_modified, machine, environ=environ
        )
    else:
        refused: list[SrcbuildError] = []
        found = find_wheel(
            cache, recipe, package, remotes, fp, trust, warn, refused, options.allow_modified, machine, environ=environ
        )
        if found is None:
            if refused:  # a remote had it, but nobody may vouch for it or it arrived damaged
                raise refused[0]
            raise miss_error(recipe, package, fp, cache, remotes, environ)
        found.entry.check()  # a wheel changed on disk since it was stored is never installed
        manifest, wheel_path, origin = found.entry.manifest, found.entry.wheel_path, found.origin
    findings = tuple(check_fit(manifest, target))
    if has_errors(findings):
        first = next(f for f in findings if f.severity is Severity.ERROR)
        raise IncompatibleError(first.message, first.fix or None)
    installed = False
    if not dry_run:
        result = proc.run(pip_install_argv(python, wheel_path, options), echo=echo)
        if not result.ok:
            tail = "\n".join(result.tail[-5:])
            raise StepFailed(
                f"pip could not install {manifest.wheel} into {python} (exit {result.returncode}):\n{tail}",
                "read pip's message above; the cached wheel itself is intact"
                + ("" if options.no_deps else " (add --no-deps to install it without its dependencies)"),
            )
        installed = True
    return InstallResult(
        package=package,
        recipe=recipe.name,
        fingerprint=fp,
        wheel=wheel_path,
        origin=origin,
        python=python,
        findings=findings,
        installed=installed,
    )


__all__ = [
    "Found",
    "InstallResult",
    "PipOptions",
    "Target",
    "find_wheel",
    "install",
    "peek_wheel",
    "pip_install_argv",
    "request_fingerprint",
    "target_python",
]
