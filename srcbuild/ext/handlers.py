"""What the extension build's own steps do when they run: ``EXT_HANDLERS`` maps each action of
``srcbuild.ext.actions`` to its handler, next to the executor's own (``srcbuild.execute.registry``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from srcbuild import __version__, proc
from srcbuild.errors import StepFailed
from srcbuild.execute.context import BuildContext
from srcbuild.execute.dist import find_wheel
from srcbuild.execute.handlers import show_verification
from srcbuild.execute.records import PreflightPassed, WheelStored, WheelVerified
from srcbuild.execute.registry import Handler, SkipCheck, asks, on
from srcbuild.execute.runner import Runner
from srcbuild.ext.actions import (
    CacheExtWheel,
    CheckExtCommit,
    ExtPreflight,
    FetchTorchWheel,
    TorchWheelInstalled,
    VerifyExtWheel,
)
from srcbuild.ext.key import ExtKeyInputs
from srcbuild.ext.resolve import ExtBuild
from srcbuild.ext.torch import TorchIdentity
from srcbuild.findings import Finding, Severity
from srcbuild.plan.actions import Action, SkipCondition


@dataclass
class ExtContext(BuildContext):
    """An extension build's context: the recipe's torch build (``resolved``) plus what the
    extension adds."""

    ext: ExtBuild
    identity: TorchIdentity
    inputs: ExtKeyInputs
    ext_findings: tuple[Finding, ...] = ()  # the recipe's host and toolchain findings, then the torch's
    nvcc_version: str | None = None


def _ctx(ex: Runner) -> ExtContext:
    ctx = ex.context
    assert isinstance(ctx, ExtContext)
    return ctx


def preflight(ex: Runner) -> PreflightPassed:
    from srcbuild.ext.preflight import refusal

    ctx = _ctx(ex)
    ex.console.print(f"    {ctx.identity.describe()}", markup=False, highlight=False)
    findings = ctx.ext_findings
    for f in findings:
        if f.severity is not Severity.INFO:
            ex.console.print(f.render(), markup=False, highlight=False)
    ignore = ctx.resolved.options.ignore_preflight
    stop = refusal(findings, ignore)
    if stop is not None:
        raise stop
    errors = sum(f.severity is Severity.ERROR for f in findings)
    if errors:
        ex.console.print(f"    --ignore-preflight: going on despite {errors} error(s)")
    else:
        ex.console.print(f"    {len(findings)} finding(s), no errors")
    return PreflightPassed(errors)


def fetch_torch_wheel(ex: Runner, action: FetchTorchWheel) -> None:
    """Fetch the torch wheel (``ext.fetch.fetch_torch``: kept when already there with its sha256);
    it must be the wheel the build was keyed with (``srcbuild.pipeline.read_ext_torch`` read it first)."""
    from srcbuild.ext.fetch import fetch_torch
    from srcbuild.files import sha256_file

    ctx = _ctx(ex)
    wheel, keyed = action.wheel, ctx.identity.identity.partition("sha256:")[2]
    digest = sha256_file(wheel) if wheel.is_file() else ""
    if digest != keyed:  # gone or changed since the build was keyed: fetched again, then checked
        wheel = fetch_torch(action, ex.environ)
        digest = sha256_file(wheel)
    if digest != keyed:
        raise StepFailed(
            f"{wheel} has sha256 {digest}, and this build was keyed with {ctx.identity.identity}; "
            "the file changed during the build",
            "run the same command again",
        )
    ex.console.print(f"    {wheel}: sha256 {digest}", markup=False, highlight=False)


def verify(ex: Runner, dist: Path, pattern: str) -> WheelVerified:
    from srcbuild.verify.report import verify_wheel

    ctx = _ctx(ex)
    wheel = find_wheel(dist, pattern)
    archs = list(ctx.recipe.gpu.arch) if ctx.ext.cuda else []
    report = verify_wheel(wheel, None, archs)
    show_verification(ex, report, wheel, ctx.recipe.name)
    ex.console.print(f"    {wheel.name}: kernels match the recipe" if archs else f"    {wheel.name}: read")
    kernels = report.kernels
    sass, ptx = (tuple(sorted(kernels.sass)), tuple(sorted(kernels.ptx))) if kernels is not None else ((), ())
    return WheelVerified(wheel, sass, ptx)


def cache(ex: Runner, dist: Path, pattern: str) -> WheelStored:
    from srcbuild.cache.key import ResolvedFacts
    from srcbuild.cache.manifest import Manifest, wheel_name_parts
    from srcbuild.cache.store import WheelCache
    from srcbuild.ext.key import ext_fingerprint
    from srcbuild.files import sha256_file
    from srcbuild.host.toolchain import gcc_version
    from srcbuild.verify.symbols import glibc_text, wheel_glibc

    ctx = _ctx(ex)
    b = ctx.ext
    wheel = find_wheel(dist, pattern)
    commit = None
    if b.request.is_git:
        head = proc.probe(["git", "-C", str(b.source_dir), "rev-parse", "HEAD"])
        commit = head.strip() if head else None
    gcc = ctx.resolved.toolchain("gcc").version or gcc_version(ctx.resolved.compiler.gcc)
    measured = ResolvedFacts.create(
        source_commit=commit,
        gcc_version=gcc,
        nvcc_version=ctx.nvcc_version,
        arch=tuple(str(cc) for cc in ctx.recipe.gpu.arch) if b.cuda else (),
        extra={"torch": ctx.identity.identity},
    )
    verified = ex.records.get(WheelVerified)
    package, version = wheel_name_parts(wheel.name)
    manifest = Manifest(
        package=package,
        version=version,
        wheel=wheel.name,
        sha256=sha256_file(wheel),
        fingerprint=ext_fingerprint(ctx.inputs),
        key_inputs=ctx.inputs.to_json(),
        resolved=measured.to_json(),
        recipe=ctx.recipe.to_json(),
        toolchain={"gcc": gcc or ctx.recipe.toolchain.gcc, "cuda": ctx.nvcc_version or "none",
                   "torch": ctx.identity.version},
        sass=verified.sass if verified is not None else (),
        ptx=verified.ptx if verified is not None else (),
        local_version=ctx.recipe.local_version(),
        size=wheel.stat().st_size,
        created=time.time(),
        srcbuild_version=__version__,
        extra={"torch_origin": ctx.identity.origin, "source": b.sdist.to_json() if b.sdist else str(b.request)},
        glibc_needed=glibc_text(wheel_glibc(wheel)),
    )
    build_log = ex.log_path(ex.plan.step_ids.index("build") + 1, ex.plan.step("build"))
    entry = WheelCache(ctx.paths.cache_dir).store(wheel, manifest, build_log if build_log.is_file() else None)
    ex.result.wheel = entry.wheel_path
    ex.console.print(f"    stored {entry.wheel_path}")
    return WheelStored(entry.wheel_path)


def check_commit(ex: Runner, action: CheckExtCommit) -> None:
    """The checked-out commit of a git tag is the one it named when first seen here (recorded on
    first sight); another is refused with exit 7 unless ``accept_moved`` (then recorded)."""
    from srcbuild.errors import SourceMismatch
    from srcbuild.sources import tagpins

    head = proc.probe(["git", "-C", str(action.source), "rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    commit = head.strip() if head else ""
    if not commit:
        raise StepFailed(f"{action.source}: no commit checked out", "run the same command again")
    seen = tagpins.seen_in(action.record, action.url, action.ref)
    via = f"fetched from {action.fetched_from}" if action.fetched_from != action.url else "fetched from upstream"
    if seen is not None and seen != commit and not action.accept_moved:
        raise SourceMismatch(
            f"tag {action.ref} of {action.url} resolves to {commit} ({via}), but it named {seen} when first "
            f"seen here ({action.record}); nothing was built from it",
            f"the tag was moved, by upstream or by the mirror: fetch from a source you trust; if the move is "
            f"expected, name the commit (git+{action.url}@{commit}) or rerun with --accept-moved-tag",
            {"tag": action.ref, "commit": commit, "first_seen": seen, "mirror": action.fetched_from},
        )
    if seen != commit:
        tagpins.remember_in(action.record, action.url, action.ref, commit)
    ex.console.print(f"    {action.ref} is {commit[:12]}", markup=False, highlight=False)


EXT_HANDLERS: dict[type[Action], Handler] = dict(
    (
        on(CheckExtCommit, lambda ex, action, step, log: check_commit(ex, action)),
        on(FetchTorchWheel, lambda ex, action, step, log: fetch_torch_wheel(ex, action)),
        on(ExtPreflight, lambda ex, action, step, log: preflight(ex)),
        on(VerifyExtWheel, lambda ex, action, step, log: verify(ex, action.dist, action.pattern)),
        on(CacheExtWheel, lambda ex, action, step, log: cache(ex, action.dist, action.pattern)),
    )
)


TORCH_VERSION_PROBE = "import importlib.metadata as m; print(m.version('torch'))"


def torch_wheel_installed(ex: Runner, condition: TorchWheelInstalled) -> bool:
    """Whether the environment still holds the torch wheel it recorded (sha256 and version)."""
    try:
        recorded = condition.marker.read_text(encoding="utf-8").strip()
    except OSError:
        return False
    if recorded != condition.sha256:
        return False
    out = proc.probe([str(condition.python), "-c", TORCH_VERSION_PROBE], env=ex.environ, timeout=60)
    return out is not None and out.strip().splitlines()[-1:] == [condition.version]


EXT_SKIP_CHECKS: dict[type[SkipCondition], SkipCheck] = dict((asks(TorchWheelInstalled, torch_wheel_installed),))
