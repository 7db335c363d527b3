"""What the typed actions and skip conditions of ``srcbuild.plan.actions`` do when a build runs.

Each function takes the running executor (``srcbuild.execute.runner.Runner``: its console, its
``BuildContext``) and the action's own inputs (``srcbuild.execute.registry`` maps each action type
to its function);
it prints what it finds and raises a ``SrcbuildError`` subclass when the build must stop. The
sibling packages do the real work: ``srcbuild.resolve`` (the findings and the refusal),
``srcbuild.verify`` (the wheel's kernels), ``srcbuild.cache`` (the wheel store),
``srcbuild.sources`` (sync and patches).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.console import print_lines
from srcbuild.errors import CacheIntegrityError, EnvironmentError_, HostError, StepFailed, VerificationFailed
from srcbuild.execute.context import BuildContext
from srcbuild.execute.dist import find_wheel
from srcbuild.execute.records import (
    CompilerCacheCounted,
    CompilerCacheStarted,
    Done,
    LocalChangesFound,
    PreflightPassed,
    SourcesChecked,
    TorchBuilt,
    TorchWheelCopied,
    WheelStored,
    WheelVerified,
)
from srcbuild.execute.result import CachedWheel
from srcbuild.execute.runner import Runner
from srcbuild.execute.state import FAILED
from srcbuild.findings import Severity
from srcbuild.plan.actions import CheckLocalChanges
from srcbuild.plan.model import Step
from srcbuild.precedence import env_value
from srcbuild.resolve import ResolvedBuild
from srcbuild.sources import checkout

if TYPE_CHECKING:
    from srcbuild.compiler_cache import CompilerCacheConfig
    from srcbuild.compiler_cache.model import CacheStats
    from srcbuild.plan.actions import CacheWheel, CheckBuildTree
    from srcbuild.sources.localdiff import LocalChanges
    from srcbuild.sources.patches import PatchSet
    from srcbuild.sources.sync import SourceSync
    from srcbuild.toolchain.planned import PlannedProvision
    from srcbuild.verify.report import VerifyReport


def _ctx(ex: Runner) -> BuildContext:
    ctx = ex.context
    assert ctx is not None, "a build's handlers run with its BuildContext"
    return ctx


def preflight(ex: Runner, log: Path) -> PreflightPassed:
    """Show the resolved build's rule and host findings; stop with ``refusal``'s error when they say so.
    Every finding, notes included, is written to the step's ``log``."""
    from srcbuild.resolve import refusal

    r = _ctx(ex).resolved
    with log.open("a", encoding="utf-8") as handle:
        handle.write("".join(f.render() + "\n" for f in r.findings))
    # wrapped as `srcbuild plan` wraps them, so both show the same lines
    print_lines([f.render() for f in r.findings if f.severity is not Severity.INFO], ex.console)
    errors = r.errors
    if r.options.ignore_preflight and errors:
        ex.console.print(
            f"    --ignore-preflight: going on despite {len(errors)} error(s); expect the build to fail as they say"
        )
        return PreflightPassed(len(errors))
    stop = refusal(r)
    if stop is not None:
        raise stop
    ex.console.print(
        f"    {len(r.rule_findings)} rule finding(s), {len(r.host_findings)} host finding(s), no errors (all in {log})"
    )
    from srcbuild.resolve.network import network_line

    ex.console.print(f"    {network_line(r)}", markup=False, highlight=False)
    return PreflightPassed()


def sync_sources(ex: Runner, sync: SourceSync, step: Step, log: Path) -> Done:
    """Run the sources step's commands that are still pending, holding the object cache's lock.

    The plan lists every command of a sync; ``checkout.done_count()`` says how many of them, from
    the first, the checkout on disk already reflects (all when it is complete, all but the
    submodule commands when it is at the tag); the rest run.
    """
    from filelock import Timeout

    from srcbuild.sources.diagnose import explain_git_failure

    lock = checkout.lock(sync)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        ex.console.print(f"    waiting for another sync of {sync.cache.name} to finish (it shares the object cache)")
        lock.acquire()
    try:
        planned = list(step.commands)
        done = planned[: checkout.done_count(sync, ex.environ)]
        todo = planned[len(done) :]
        if done:
            why = (
                "the checkout is complete"
                if not todo
                else f"{sync.checkout} is already at {sync.pin.tag}; its submodules are synced next"
            )
            ex.console.print(f"    skipping {len(done)} of {len(planned)} command(s): {why}")
            for cmd in done:
                ex.console.print(f"[dim]    skipped: {cmd.shell()[:120]}[/dim]", highlight=False)

        def explain(cmd: Command, result: proc.RunResult) -> StepFailed:
            failure = explain_git_failure(cmd, result.tail, sync.mirrors, sync.label, log)
            # newer git names a submodule by its absolute path: show it relative to the checkout
            return StepFailed(failure.message.replace(f" {sync.checkout}/", " "), failure.hint)

        for cmd in todo:
            ex.run_command(step, cmd, log, explain=explain)
    finally:
        lock.release()
    return Done()


def apply_patches(ex: Runner, patches: PatchSet, step: Step, log: Path) -> Done:
    """Refuse a checkout with patches the recipe no longer asks for (``PatchSet.pending``), then run
    the step's commands; a failed check or apply names the patch, git's words and the log."""
    from srcbuild.sources.patches import explain_patch_failure

    todo = checkout.pending_patches(patches, ex.environ)
    if todo.labels != patches.labels:
        done = [label for label in patches.labels if label not in todo.labels]
        ex.console.print(f"    already applied: {', '.join(done)} (their commands skip them)", markup=False)
    for cmd in step.commands:
        ex.run_command(step, cmd, log, explain=lambda c, result: explain_patch_failure(c, result.tail, log))
    return Done()


def verify_sources(ex: Runner, sync: SourceSync) -> SourcesChecked:
    """The checkout's commit is the pin's and every submodule is at its recorded commit: both
    recorded for the cache's manifest."""
    commit = checkout.verify_commit(sync, ex.environ)
    commits = checkout.complete_commits(sync, ex.environ)  # is_complete() and submodule_commits(): one git status
    if commits is None:
        raise StepFailed(
            f"{ex.plan.checkout} is not complete: a submodule is missing or not at its recorded commit",
            "fetch through a mirror (--mirror gitee or --mirror PREFIX=REPLACEMENT) and rerun",
        )
    ex.console.print(f"    {ex.plan.package} at {commit[:12]}, {len(commits)} submodule(s) checked out")
    return SourcesChecked(commit, tuple(sorted(commits.items())))


def check_env(ex: Runner, prefix: Path, want: str) -> Done:
    python = prefix / "bin" / "python"
    kind = "conda" if (prefix / "conda-meta").is_dir() else "venv" if (prefix / "pyvenv.cfg").is_file() else None
    if kind is None or not python.exists():
        # what srcbuild.envs accepts as --env; it raises the UsageError that says what is wrong
        # (imported only then: the environments package is not needed to use a good one)
        from srcbuild.envs.prefix import existing_env

        env = existing_env(prefix)
        kind, python = env.backend.replace("existing ", ""), env.python
    out = proc.probe([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
    if out is None:
        raise EnvironmentError_(
            f"--env {prefix}: {python} does not run", "pass the prefix of an environment whose Python runs"
        )
    if out.strip() != want:
        raise EnvironmentError_(
            f"--env {prefix} has Python {out.strip()}, the recipe pins {want}",
            f"pass an environment with Python {want}, or leave out --env to let srcbuild create one",
        )
    ex.console.print(f"    existing {kind} environment with Python {out.strip()} at {python}")
    return Done()


def provision(ex: Runner, planned: tuple[PlannedProvision, ...], log: Path) -> Done:
    """Fetch (or reuse) each planned toolchain prefix; downloads report their progress."""
    import sys

    from srcbuild.toolchain.planned import rerouted, run_planned
    from srcbuild.toolchain.session import open_session

    session = open_session(_ctx(ex).paths, stream=sys.stderr, environ=ex.environ)  # progress on stderr
    outcomes = run_planned(planned, session)
    for outcome in outcomes:
        t = outcome.toolchain
        state = "reused" if outcome.reused else "provisioned"
        ex.console.print(f"    {t.name} {t.version} ({t.provider}) {state}: {t.prefix}")
    moved = rerouted(planned, outcomes)  # another route made a prefix: the build is planned again
    if moved is not None:
        raise moved
    return Done()


def ensure_env(ex: Runner, log: Path) -> Done:
    """Make (or reuse) the environment the resolved build chose, with the backend it chose."""
    from srcbuild.envs.backends import backend_for
    from srcbuild.envs.backends.base import CommandIO

    env = _ctx(ex).resolved.environment
    if env.error is not None:
        raise HostError(env.error[0], env.error[1] or None)
    assert env.backend is not None and env.envs_dir is not None and env.spec is not None
    backend = backend_for(env.backend, env.executable)
    made = backend.ensure(env.spec, env.envs_dir, env.lockfile, log, CommandIO(ex.environ, ex.console.file))
    link = env.prefix
    if Path(made.prefix) != link:
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.exists():
            shutil.rmtree(link)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(made.prefix, target_is_directory=True)
    state = "reused" if made.reused else f"made in {made.seconds:.1f}s"
    ex.console.print(f"    {backend.name} environment {made.prefix} ({state})")
    return Done()


def _clean_build_tree(ex: Runner, action: CheckBuildTree) -> None:
    cache = action.cache
    for cleanup in action.cleanup:
        result = proc.run(cleanup.argv, cwd=cleanup.cwd, env=ex.command_env(cleanup))
        if not result.ok:
            raise StepFailed(f"cleaning the stale build tree failed ({cleanup.shell()})", "remove build/ by hand")
    stale_dir = cache.parent
    if stale_dir.exists():
        shutil.rmtree(stale_dir)


def check_build_tree(ex: Runner, action: CheckBuildTree) -> Done:
    """Reuse the build tree when it was configured with these settings; clean it when they
    changed, and when the last build failed in it and this one is not ``--resume``/``--keep-build``."""
    digest, hash_file, cache = action.digest, action.hash_file, action.cache
    stored = hash_file.read_text().strip() if hash_file.is_file() else None
    last = ex.previous.steps.get("build") if ex.previous is not None else None
    failed_before = last is not None and last.status == FAILED and not ex.plan.keep_build
    if cache.is_file() and stored != digest:
        why = "no record of its settings" if stored is None else f"settings hash {stored} != {digest}"
        ex.console.print(f"    {cache} was configured with other settings ({why}): cleaning it first")
        _clean_build_tree(ex, action)
    elif failed_before and cache.parent.exists():
        ex.console.print("    the last build failed in this tree: starting from setup.py clean (--resume continues it)")
        _clean_build_tree(ex, action)
    elif cache.is_file():
        ex.console.print("    the existing build tree was configured with these settings: reusing it")
    hash_file.parent.mkdir(parents=True, exist_ok=True)
    hash_file.write_text(digest + "\n")
    return Done()


def _local_changes(ex: Runner, sync: SourceSync, patches: tuple[Path, ...]) -> LocalChanges:
    from srcbuild.sources.localdiff import local_changes

    submodules = sorted(checkout.submodule_commits(sync, ex.environ))
    return local_changes(sync.checkout, patches, submodules, tag=sync.pin.tag, environ=ex.environ)


def check_local_changes(ex: Runner, action: CheckLocalChanges) -> LocalChangesFound:
    changes = _local_changes(ex, action.sync, action.patches)
    if not changes.modified:
        ex.console.print("    the checkout is the tag plus the recipe's patches: no local modifications")
        return LocalChangesFound(changes)
    ex.console.print(
        f"    warning: {len(changes.files)} locally modified file(s): {changes.summary()}; the wheel is "
        "cached as modified (cache push needs --allow-modified)",
        markup=False,
        highlight=False,
    )
    return LocalChangesFound(changes)


def _cc_read(config: CompilerCacheConfig, env: dict[str, str]) -> CacheStats:
    from srcbuild.compiler_cache import kind_module

    kind = kind_module(config.kind)
    out = proc.probe(kind.stats_argv(config), env=env, timeout=60)
    if out is None:
        raise StepFailed(f"{config.kind} did not report its counters", f"run `{config.kind} --show-stats` by hand")
    return kind.parse_stats(out)


def compiler_cache_start(ex: Runner, config: CompilerCacheConfig, log: Path) -> CompilerCacheStarted:
    """Start the compiler cache with the build's settings (sccache: its own server) and keep its counters."""
    from srcbuild.compiler_cache import kind_module

    kind = kind_module(config.kind)
    env = ex.plan.env.apply(ex.environ)
    if config.dist_scheduler:
        from srcbuild.compiler_cache.dist import write_client_config

        path = write_client_config(config, ex.environ)
        ex.console.print(f"    sccache-dist client of {config.dist_scheduler} (configuration {path})")
    if config.server_file is not None:
        config.server_file.parent.mkdir(parents=True, exist_ok=True)
    stop = kind.stop_argv(config)
    if stop is not None:
        proc.probe(stop, env=env, timeout=60)  # this build's own, left by a killed run; often none
    for argv in kind.start_argv(config):
        result = proc.run(argv, env=env, log_path=log)
        if not result.ok:
            said = "; ".join(line for line in result.tail[-3:] if line.strip())
            raise StepFailed(f"{config.kind} did not start: {said}", f"read {log}, or build with --compiler-cache none")
    before = _cc_read(config, env)
    ex.console.print(f"    {config.label()} ready")
    return CompilerCacheStarted(before)


def compiler_cache_stats(ex: Runner, config: CompilerCacheConfig) -> CompilerCacheCounted:
    """Put this build's hits and misses in the result; stop sccache's server."""
    from srcbuild.compiler_cache import kind_module

    env = ex.plan.env.apply(ex.environ)
    started = ex.records.get(CompilerCacheStarted)
    stats = _cc_read(config, env).minus(started.before if started is not None else None)
    stop = kind_module(config.kind).stop_argv(config)
    if stop is not None:
        proc.probe(stop, env=env, timeout=60)
    if config.server_file is not None:
        config.server_file.unlink(missing_ok=True)  # sccache leaves its socket file behind
    ex.result.compiler_cache = {**stats.to_json(), "url": config.url, "dist_scheduler": config.dist_scheduler}
    ex.console.print(f"    compiler cache {stats.summary()}")
    return CompilerCacheCounted(stats)


def verify_wheel(ex: Runner, dist: Path, pattern: str) -> WheelVerified:
    from srcbuild.verify.report import verify_wheel as verify

    ctx = _ctx(ex)
    wheel = find_wheel(dist, pattern)
    report = verify(wheel, ctx.recipe, ctx.recipe.gpu.arch)
    portable = ctx.resolved.portable
    if portable is not None:  # the wheel may need no glibc newer than the sysroot it was built against
        from dataclasses import replace

        from srcbuild.verify.checks import check_portable

        report = replace(report, findings=(*report.findings, *check_portable(wheel, portable.glibc)))
    show_verification(ex, report, wheel, ctx.recipe.name)
    ex.console.print(f"    {wheel.name}: kernels match the recipe")
    if portable is not None:
        needed = report.extra.get("glibc_needed") or "no versioned symbol"
        ex.console.print(f"    needs glibc {needed} (sysroot {portable.glibc}): {report.extra.get('manylinux')}")
        if report.extra.get("manylinux_held_back_by"):
            from srcbuild.verify.manylinux import listed

            ex.console.print(f"    not older because of {listed(report.extra['manylinux_held_back_by'])}")
    kernels = report.kernels
    sass, ptx = (tuple(sorted(kernels.sass)), tuple(sorted(kernels.ptx))) if kernels is not None else ((), ())
    return WheelVerified(wheel, sass, ptx)


def cache_wheel(ex: Runner, action: CacheWheel) -> WheelStored:
    """Store the wheel with its manifest: the key's inputs, and what the earlier steps measured
    (their records: the commits, local modifications found before the build, the kernels)."""
    from srcbuild.cache.key import ResolvedFacts
    from srcbuild.cache.manifest import Manifest
    from srcbuild.cache.store import WheelCache
    from srcbuild.execute.retag import portable_record
    from srcbuild.resolve.key import key_inputs
    from srcbuild.verify.symbols import glibc_text, wheel_glibc

    ctx = _ctx(ex)
    wheel = find_wheel(action.dist, action.pattern)
    verified = ex.records.get(WheelVerified)
    sources = ex.records.get(SourcesChecked)
    if sources is None:  # a state file of a run that kept no records
        raise StepFailed(
            f"the state file {ex.plan.state_path} holds no record of the sources check",
            "run the same command without --resume",
        )
    # modifications found before the build count even if undone since; otherwise look now (the
    # sources may have been edited during the build, or between a failed run and its --resume)
    before = ex.records.get(LocalChangesFound)
    changes = before.changes if before is not None and before.changes.modified else None
    if changes is None and action.sync is not None:
        changes = _local_changes(ex, action.sync, action.patches)
    if changes is not None and changes.modified:
        ex.console.print(f"    built from modified sources: {changes.summary()}", markup=False, highlight=False)
    modified = changes if changes is not None and changes.modified else None
    gcc = _measured_gcc(ctx.resolved)
    nvcc = _measured_nvcc(ctx.resolved)
    measured = ResolvedFacts.create(
        source_commit=sources.commit,
        submodule_commits=dict(sources.submodules),
        gcc_version=gcc,
        nvcc_version=nvcc,
        arch=tuple(str(cc) for cc in ctx.recipe.gpu.arch),
        extra={**({"source_diff": modified.diff_sha256} if modified else {}), **_container_image(ex)} or None,
    )
    manifest = Manifest.create(
        wheel,
        key_inputs(ctx.resolved),
        measured,
        recipe=ctx.recipe.to_json(),
        toolchain={
            "gcc": gcc or ctx.recipe.toolchain.gcc,
            "cuda": nvcc or ctx.recipe.toolchain.cuda or "none",
            **_provisioned(ctx.resolved),
        },
        sass=verified.sass if verified is not None else (),
        ptx=verified.ptx if verified is not None else (),
        local_version=ctx.recipe.local_version(),
        changes=modified.to_json() if modified else None,
        glibc_needed=glibc_text(wheel_glibc(wheel)),
        portable=portable_record(ctx.resolved, wheel),
    )
    build_log = action.build_log
    kept = build_log if build_log is not None and build_log.is_file() else None
    entry = WheelCache(ctx.paths.cache_dir).store(wheel, manifest, kept)
    ex.result.wheel = entry.wheel_path
    ex.result.cached_wheel = CachedWheel(entry.wheel_path, entry.manifest.sha256, entry.key)
    ex.console.print(f"    stored {entry.wheel_path}")
    return WheelStored(entry.wheel_path)


def _provisioned(r: ResolvedBuild) -> dict[str, str]:
    """``provisioned.cuda``: the prefix of each toolchain piece srcbuild fetched, for the manifest."""
    from srcbuild.resolve.model import Provider

    return {f"provisioned.{t.name}": str(t.path) for t in r.toolchains if t.provider is Provider.PROVISIONED}


def _container_image(ex: Runner) -> dict[str, str]:
    """The devel image a `srcbuild container build` runs this build in (its id), else nothing."""
    from srcbuild.container import BUILD_IMAGE_VAR

    image = env_value(ex.environ, BUILD_IMAGE_VAR)
    return {"container_image": image} if image else {}


def _measured_gcc(r: ResolvedBuild) -> str | None:
    """The version of the selected gcc: the host probe's, else asked now."""
    from srcbuild.host.toolchain import gcc_version

    return r.toolchain("gcc").version or gcc_version(r.compiler.gcc)


def _measured_nvcc(r: ResolvedBuild) -> str | None:
    """The version of the resolved toolkit's nvcc: the host probe's, else asked now (None: CPU build)."""
    from srcbuild.host.toolchain import nvcc_version

    cuda = r.toolchain("cuda")
    if cuda.path is None:
        return None
    return cuda.version or nvcc_version(cuda.path / "bin" / "nvcc")


def torch_wheel(ex: Runner, dest: Path) -> TorchWheelCopied:
    """Copy the torch wheel torch's pipeline returned (it ran before this step) into ``dest``,
    hashing the bytes as they are copied: a wheel that differs from its manifest's sha256 (bit rot
    that kept the file's size and mtime, which the lookup's quick check trusts) is never built on."""
    from srcbuild.cache.store import WheelCache
    from srcbuild.files import copy_hashed

    built = ex.records.get(TorchBuilt)
    if built is None or not built.sha256:  # a srcbuild bug: the pipeline runs torch's build before this step
        raise StepFailed("no torch wheel was built or found for this step", "report this as a srcbuild bug")
    wheel = built.wheel
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    target = dest / wheel.name
    got = copy_hashed(wheel, target)
    if got != built.sha256:
        target.unlink()
        moved = WheelCache(_ctx(ex).paths.cache_dir).move_aside(wheel.parent)
        where = f"moved aside to {moved}" if moved else f"remove {wheel.parent}"
        raise CacheIntegrityError(
            f"torch wheel {wheel.name} of cache entry {built.entry[:12]} has sha256 {got}, "
            f"its manifest says {built.sha256}; the entry is damaged ({where})",
            f"run the same command again: torch is then pulled or rebuilt, and {ex.plan.package} built against it",
        )
    ex.console.print(f"    torch wheel: {wheel} (sha256 checked)")
    return TorchWheelCopied(wheel, target)


def show_verification(ex: Runner, report: VerifyReport, wheel: Path, recipe_name: str) -> None:
    """Print a built wheel's kernel coverage and findings; raise VerificationFailed when it fails."""
    for row in report.coverage_rows():
        verdict = "runs" if row.get("runs") else "does NOT run"
        ex.console.print(f"    compute capability {row.get('cc')}: {verdict} ({row.get('via') or 'no kernels'})")
    for f in report.findings:
        if f.severity is not Severity.INFO:
            ex.console.print(f.render(), markup=False, highlight=False)
    if not report.ok:
        raise VerificationFailed(
            f"{wheel.name} does not hold what recipe {recipe_name} asks for: {report.errors[0].message}",
            report.errors[0].fix or "the wheel was not cached; see srcbuild verify for the full report",
        )
