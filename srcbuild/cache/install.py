"""``srcbuild install``: find the recipe's wheel (local store, then remotes), check it fits, pip it in.

The flow: the caller gives the request fingerprint (``srcbuild.resolve.request``: no git,
compiler or network), look in the local store
(whose lookup checks the wheel against its manifest), then in each remote in order (pulling a hit
into the local store when a trusted signer vouches for it, verified by sha256; a remote that
fails is a warning), check it fits the target (``fit``), and run the target's pip through
``srcbuild.proc``. A miss is an error that names the build command; nothing is built here.

The wheel is handed to pip in pip's hash-checking mode: ``pip install --no-deps --require-hashes
-r REQ`` with ``REQ`` the one line ``NAME @ file:///...whl#sha256=<H> --hash=sha256:<H>``, ``H``
the manifest's sha256. pip hashes the file before it installs it, so a wheel changed on disk since
the lookup is refused by pip, never installed; that is the hit's one hash. The same digest in the
URL (pip's documented ``#sha256=`` form, which also satisfies ``--require-hashes``) is what pip
records as the file's hash once it has checked it: without it pip hashes the whole file a second
time for its own install record (``direct_url.json``), as a plain ``pip install FILE`` does.
Hash-checking mode needs a hash for every requirement, so the wheel's own dependencies (its
``Requires-Dist``) are installed by a second ``pip install`` from pip's index, unless ``--no-deps``,
with the knowledge base's run-time pins joined to them (``srcbuild.cache.pins``: ``pillow<10`` for
torchvision 0.12 and older).
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from srcbuild import proc
from srcbuild.cache.fit import Machine, Target, check_fit, fits, probe_target
from srcbuild.cache.installer import hashed_uv_requirement, uv_binary, uv_hash_mismatch, uv_install_argv
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.pip_target import run_pip, start_pip, target_python
from srcbuild.cache.remotes import CacheRemote
from srcbuild.cache.signing import TrustPolicy
from srcbuild.cache.store import CacheEntry, Warn, WheelCache, warn_stderr
from srcbuild.cache.transfer import fetch_first, find_remote_entry
from srcbuild.errors import (
    CacheIntegrityError,
    IncompatibleError,
    NotFoundError,
    SrcbuildError,
    StepFailed,
    UsageError,
)
from srcbuild.files import sha256_file
from srcbuild.findings import Finding, Severity, has_errors
from srcbuild.paths import Paths
from srcbuild.precedence import env_value
from srcbuild.quick_hit import state
from srcbuild.recipe import Recipe
from srcbuild.recipe.catalog import recipe_argument
from srcbuild.records import record


@record
class Found:
    """A wheel ready to install, and where it came from ("local" or a remote URL)."""

    entry: CacheEntry
    origin: str


def find_wheel(
    cache: WheelCache,
    recipe: Recipe,
    package: str,
    remotes: Sequence[CacheRemote],
    fp: str,
    trust: TrustPolicy | None = None,
    warn: Warn | None = warn_stderr,
    refused: list[SrcbuildError] | None = None,
    allow_modified: bool = False,
    machine: Machine | None = None,
    *,
    environ: Mapping[str, str],
    source_commit: str | None = None,
) -> Found | None:
    """The local hit, else the first acceptable remote hit pulled into ``cache``; None on a miss.

    ``source_commit`` (the commit this machine knows the recipe's tag names: the recipe's pin, or
    the one first seen here, ``srcbuild.sources.tagpins``) leaves out entries built from another
    commit, so a recipe that pins none never takes a wheel of another source from a shared cache.

    ``trust`` decides which remote entries are accepted (default: signed by a trusted signer).
    A damaged local entry, an unreachable remote or a refused entry is a warning, never an abort.
    Entries built from modified sources are found only with ``allow_modified``; of the others,
    the newest whose glibc ``machine`` (default: this one, ``Machine.host``) has. ``fp`` is the
    fingerprint a build of ``package`` for ``recipe`` stores its wheel under
    (``srcbuild.resolve.request.request_fingerprint``, or a resolved build's key).
    """
    target = machine or Machine.host(environ)

    def fits_target(manifest: Manifest) -> bool:
        if source_commit is not None and manifest.resolved.get("source_commit") != source_commit:
            return False
        return fits(manifest, target)

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


@record
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
    driver_answered: bool = False  # whether nvidia-smi answered the fit check (srcbuild.quick_hit's record)
    wheel_state: tuple[object, ...] | None = None  # the wheel's state before the installer hashed it (the same)
    uv: str | None = None  # the uv that installed it; None: the target's pip (or nothing installed)

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


@record
class PipOptions:
    """How ``install`` runs pip: with the wheel's dependencies (pip resolves them from its usual
    index, or ``index_url``/``extra_index_urls``) unless ``no_deps``; ``allow_modified`` lets an
    entry built from modified sources be installed."""

    no_deps: bool = False
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    allow_modified: bool = False


def hashed_requirement(manifest: Manifest, wheel: Path) -> str:
    """The requirements-file line that pins ``wheel`` to its manifest's sha256 (pip's hash-checking mode).

    The digest is given twice: as ``--hash`` and in the URL (``#sha256=``). pip checks the file
    against both (they are one value) in one pass, and then takes the URL's, now verified, for its
    install record instead of hashing the file again."""
    digest = manifest.sha256
    return f"{manifest.package} @ {wheel.resolve().as_uri()}#sha256={digest} --hash=sha256:{digest}\n"


def pip_install_argv(python: Path, requirements: Path) -> list[str]:
    """``PY -m pip install --no-deps --require-hashes -r REQ``: the wheel alone, its hash checked by pip."""
    return [
        str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--require-hashes",
        "-r", str(requirements),
    ]  # fmt: skip


def pip_deps_argv(python: Path, requires: Sequence[str], options: PipOptions) -> list[str]:
    """``PY -m pip install [--index-url U] ... REQUIREMENT...``: the wheel's dependencies."""
    argv = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    if options.index_url:
        argv += ["--index-url", options.index_url]
    for url in options.extra_index_urls:
        argv += ["--extra-index-url", url]
    return [*argv, *requires]


def applicable(requires: list[str]) -> list[str]:
    """The requirements pip should install with a wheel: not an extra's (``; extra == "test"``: no
    extra is asked for), not a direct reference (``name @ git+https://...``: a URL pip would fetch
    and build unchecked); other markers are kept, for pip to evaluate in the target environment."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.url:
            continue
        if req.marker is not None and "extra" in str(req.marker) and not req.marker.evaluate({"extra": ""}):
            continue
        out.append(text)
    return out


def wheel_requires(wheel: Path, name: str) -> list[str]:
    """The wheel's ``Requires-Dist`` lines that apply (``applicable``; markers kept: pip evaluates
    them for the target)."""
    from email.parser import BytesParser

    from srcbuild.limits import MiB, read_member

    try:
        with zipfile.ZipFile(wheel) as zf:
            member = next(
                (i for i in zf.infolist() if i.filename.endswith(".dist-info/METADATA") and i.filename.count("/") == 1),
                None,
            )
            if member is None:
                return []
            data = read_member(zf, member, name, 4 * MiB)
    except (zipfile.BadZipFile, OSError) as exc:
        raise CacheIntegrityError(f"{name}: not a readable wheel ({exc})", "rebuild it") from None
    return applicable([str(r) for r in BytesParser().parsebytes(data).get_all("Requires-Dist") or []])


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
    fingerprint: Callable[[], str],
    echo: Any = None,
    dry_run: bool = False,
    trust: TrustPolicy | None = None,
    warn: Warn | None = warn_stderr,
    options: PipOptions | None = None,
    *,
    environ: Mapping[str, str],
    pip: proc.Waiting | None = None,
) -> InstallResult:
    """Find, check and install the wheel stored under the fingerprint ``fingerprint()`` gives
    (``srcbuild.resolve.request.request_fingerprint``, computed while the target interpreter
    answers); raises on a miss, a misfit or a failed pip.

    ``pip``: ``start_pip(python)`` already started by the caller (earlier is better: it loads while
    the caller imports this), who also stops it; without one, install starts its own and stops it
    unless it installs."""
    options = options or PipOptions()
    uv = None if dry_run else uv_binary(environ)
    # pip loads itself while the key, the lookup and the fit check decide whether it runs at all
    own = start_pip(python) if pip is None and uv is None and not dry_run else None
    try:
        asking = proc.Background(lambda: probe_target(python))  # the target answers while the key is computed
        fp = fingerprint()
        target = asking.result()
        if target is None:
            raise UsageError(f"{python} does not run", "pass a working interpreter with --python or --into PREFIX")
        described = env_value(environ, "SRCBUILD_MACHINE_FILE")
        machine = Machine.host(environ) if described else Machine(target.machine, target.glibc)
        if dry_run:  # find and check, but download nothing: a remote hit is judged by its signed manifest
            manifest, wheel_path, origin = peek_wheel(
                cache, recipe, package, remotes, fp, trust, warn, options.allow_modified, machine, environ=environ
            )
        else:
            refused: list[SrcbuildError] = []
            found = find_wheel(
                cache, recipe, package, remotes, fp, trust, warn, refused, options.allow_modified, machine,
                environ=environ,
            )
            if found is None:
                if refused:  # a remote had it, but nobody may vouch for it or it arrived damaged
                    raise refused[0]
                raise miss_error(recipe, package, fp, cache, remotes, environ)
            manifest, wheel_path, origin = found.entry.manifest, found.entry.wheel_path, found.origin
        findings = tuple(check_fit(manifest, target))
        if has_errors(findings):
            first = next(f for f in findings if f.severity is Severity.ERROR)
            raise IncompatibleError(first.message, first.fix or None)
        installed = False
        before = None
        if not dry_run:
            before = state(str(wheel_path))
            _pip_install(python, manifest, wheel_path, options, echo, pip or own, uv)
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
            driver_answered=target.driver_cuda is not None or bool(target.gpus),
            wheel_state=before,
            uv=uv,
        )
    finally:
        if own is not None:
            own.cancel()  # a miss or a misfit: it stops having done nothing (after it ran, a no-op)


def _pip_install(
    python: Path,
    manifest: Manifest,
    wheel: Path,
    options: PipOptions,
    echo: Any,
    pip: proc.Waiting | None,
    uv: str | None,
) -> None:
    """uv (or pip) installs the wheel in hash-checking mode, then (unless ``no_deps``) pip its dependencies."""
    pip_install_hashed(python, manifest, wheel, echo, pip=pip, uv=uv)
    requires = [] if options.no_deps else wheel_requires(wheel, manifest.wheel)
    if not requires:
        return
    from srcbuild.cache.pins import pinned_requires  # packaging's requirement parser: only for a wheel with deps
    from srcbuild.knowledge.base import runtime_pins  # breakages.toml alone, as the lookup's key

    requires = pinned_requires(requires, runtime_pins(manifest.package, manifest.version))  # pillow<10, ...
    result = proc.run(pip_deps_argv(python, requires, options), echo=echo)
    if not result.ok:
        raise deps_failed(manifest, result)


def pip_install_hashed(
    python: Path,
    manifest: Manifest,
    wheel: Path,
    echo: Any,
    environ: Mapping[str, str] | None = None,
    pip: proc.Waiting | None = None,
    uv: str | None = None,
) -> None:
    """The wheel alone into ``python``'s environment in hash-checking mode with the manifest's sha256
    (exit 7 when the bytes changed since they were stored; the installer reads the file anyway, so
    this is the one hash): by ``uv`` when given (``installer.uv_binary``), else by the target's pip
    (``pip``: that pip already started, ``pip_early``, which runs the same command)."""
    with tempfile.TemporaryDirectory(prefix="srcbuild-install-") as work:
        requirements = Path(work) / "requirements.txt"
        if uv is not None:
            requirements.write_text(hashed_uv_requirement(manifest.package, manifest.sha256, wheel), encoding="utf-8")
            result = proc.run(uv_install_argv(uv, python, requirements), env=environ, echo=echo)
            said = uv_hash_mismatch(result.tail)
            # uv may stop at a zip CRC error before its hash check says anything: the wheel's bytes
            # are what decides, hashed again (only on this failure path)
            mismatch = said is not None or (not result.ok and _changed(wheel, manifest.sha256))
            start = said if said is not None else -5
            tool = "uv"
        else:
            requirements.write_text(hashed_requirement(manifest, wheel), encoding="utf-8")
            argv = pip_install_argv(python, requirements)
            result = run_pip(pip, argv, echo) if pip is not None else proc.run(argv, env=environ, echo=echo)
            found = [i for i, line in enumerate(result.tail) if "THESE PACKAGES DO NOT MATCH THE HASHES" in line]
            mismatch = bool(found)
            start = found[-1] if found else -5
            tool = "pip"
    if not result.ok:
        # a mismatch: the installer's whole report (the digest expected and the one found)
        tail = "\n".join(result.tail[start:])
        raise (CacheIntegrityError if mismatch else StepFailed)(
            f"{tool} could not install {manifest.wheel} into {python} (exit {result.returncode}):\n{tail}",
            "the cached wheel changed after it was stored: `srcbuild cache verify --remove` drops it"
            if mismatch
            else f"read {tool}'s message above; the cached wheel itself is intact",
        )


def _changed(wheel: Path, sha256: str) -> bool:
    """Whether ``wheel`` no longer has ``sha256`` (or cannot be read)."""
    try:
        return sha256_file(wheel) != sha256
    except OSError:
        return True


def deps_failed(manifest: Manifest, result: proc.RunResult) -> StepFailed:
    """The error for a wheel pip installed whose dependencies it then could not."""
    tail = "\n".join(result.tail[-5:])
    return StepFailed(
        f"pip installed {manifest.wheel} but not its dependencies (exit {result.returncode}):\n{tail}",
        "read pip's message above (add --no-deps to install the wheel without its dependencies)",
    )


__all__ = [
    "Found",
    "InstallResult",
    "PipOptions",
    "Target",
    "deps_failed",
    "find_wheel",
    "install",
    "peek_wheel",
    "pip_install_argv",
    "pip_install_hashed",
    "target_python",
]
