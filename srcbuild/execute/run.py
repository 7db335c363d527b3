"""One build from start to end: probe the host, make the plan, look in the cache, execute.

``prepare`` does the pure part (plus the host probe) and is what ``srcbuild plan`` prints;
``run_build`` hands that very plan to the executor. A cache hit needs no compiler and no git:
the wheel's path is printed and nothing runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import filelock
from rich.console import Console

from srcbuild.execute.executor import BuildResult, Executor, environ_for_build
from srcbuild.execute.handlers import BuildContext
from srcbuild.execute.result import CachedWheel
from srcbuild.paths import Paths
from srcbuild.plan.make import make_plan
from srcbuild.plan.model import Plan
from srcbuild.plan.render import settings_table
from srcbuild.recipe import Recipe
from srcbuild.resolve import BuildOptions, ResolvedBuild, resolve
from srcbuild.resolve.probe import probe_build_host


@dataclass(frozen=True)
class Prepared:
    resolved: ResolvedBuild
    plan: Plan


def prepare(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    meanwhile: Callable[[], None] | None = None,
) -> Prepared:
    """Probe the host, resolve the build and make its plan. The probe mostly waits for programs
    (nvcc, gcc, mpicc), so it runs in a thread while this one loads the knowledge base and runs
    ``meanwhile`` (a build imports the modules of its later steps)."""
    from srcbuild.knowledge import load_knowledge

    def alongside() -> None:
        load_knowledge()
        if meanwhile is not None:
            meanwhile()

    host = probe_build_host(recipe, options, paths, environ, meanwhile=alongside)
    resolved = resolve(recipe, options, host, load_knowledge(), paths=paths, environ=environ)
    return Prepared(resolved, make_plan(resolved))


def _import_build_steps() -> None:
    """Import what the later steps of a build use, while the host probe waits for its programs."""
    import srcbuild.cache.install
    import srcbuild.cache.key
    import srcbuild.verify.report  # noqa: F401


def run_build(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    console: Console,
    resume: bool = False,
) -> BuildResult:
    """Build ``options.package`` for ``recipe`` (or take it from the cache); the wheel is in the result."""
    from srcbuild.cache.install import find_wheel
    from srcbuild.cache.key import build_fingerprint, key_inputs
    from srcbuild.cache.remotes import RemoteOptions, open_remote, parse_remotes
    from srcbuild.cache.signing import TrustPolicy
    from srcbuild.cache.store import WheelCache

    prepared = prepare(recipe, options, paths, environ, meanwhile=_import_build_steps)
    plan, resolved = prepared.plan, prepared.resolved
    console.print(f"[bold]srcbuild {plan.package} {plan.version} (recipe {plan.recipe})[/bold]")
    console.print(settings_table(plan.settings))
    inputs = key_inputs(resolved)
    fp = build_fingerprint(resolved)
    cache = WheelCache(paths.cache_dir)

    remote_options = RemoteOptions.resolve(environ=environ)
    remotes = [open_remote(url, remote_options) for url in parse_remotes(options.remotes, environ)]
    trust = TrustPolicy.resolve(options.trust_unsigned, environ=environ)

    def warn(message: str) -> None:
        console.print(f"warning: {message}", markup=False, highlight=False)

    def hit() -> BuildResult | None:
        # the local store first (each hit checked against its manifest), then each remote (pulled
        # into the local store when a trusted signer vouches for it); a failing remote is a warning
        found = find_wheel(cache, recipe, plan.package, remotes, fp, trust, warn, environ=environ)
        if found is None:
            return None
        where = "" if found.origin == "local" else f" from {found.origin}"
        console.print(f"cache hit{where}: {found.entry.wheel_path.name} (fingerprint {fp[:12]}); nothing to build")
        entry = found.entry
        return BuildResult(
            plan,
            wheel=entry.wheel_path,
            cached=True,
            cached_wheel=CachedWheel(entry.wheel_path, entry.manifest.sha256, entry.key),
        )

    if not resume:
        found = hit()
        if found is not None:
            return found
    # Two locks: the fingerprint's (concurrent builds of the same inputs build once) and the
    # tree's (builds that share a checkout and build tree, such as two recipe files with one
    # name, take turns instead of writing into one tree at once).
    with cache.build_lock(fp), tree_lock(plan, paths, console):
        if not resume:
            found = hit()  # another build of the same inputs may have finished meanwhile
            if found is not None:
                return found
        elif _finished(plan):
            return _already_done(plan, hit, console)
        ctx = BuildContext(resolved=resolved, fingerprint_inputs=inputs)
        if plan.package == "torchvision":
            torch_options = replace(options, package="torch")

            def build_torch() -> CachedWheel:
                result = run_build(recipe, torch_options, paths, environ, console, resume=False)
                assert result.cached_wheel is not None  # a finished build stored its wheel
                return result.cached_wheel

            ctx.build_torch = build_torch
        executor = Executor(plan, console=console, environ=environ_for_build(environ), resume=resume, context=ctx)
        if plan.system_alternatives:
            _guard_system_selection(executor, resolved)
        return executor.run()


def tree_lock(plan: Plan, paths: Paths, console: Console) -> filelock.FileLock:
    """The lock of the checkout and build tree ``plan`` works in, keyed by their paths.

    A second build of the same tree waits (saying so) until the first one ends.
    """
    key = hashlib.sha256(f"{plan.checkout}\n{plan.build_root}".encode()).hexdigest()[:16]
    locks = paths.work_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(locks / f"tree-{key}.lock"))
    try:
        lock.acquire(timeout=0)
        lock.release()
    except filelock.Timeout:
        console.print(f"waiting for another build using {plan.checkout} to finish (lock {lock.lock_file})")
    return lock


def _finished(plan: Plan) -> bool:
    """Every step of this very plan is recorded as done (or skipped) in its state file."""
    from srcbuild.execute.state import BuildState

    state = BuildState.load(plan.state_path)
    return state is not None and state.plan == plan.fingerprint() and all(state.is_done(s) for s in plan.steps)


def _already_done(plan: Plan, hit: Callable[[], BuildResult | None], console: Console) -> BuildResult:
    """``--resume`` of a build that finished: nothing to resume; name its wheel."""
    from srcbuild.errors import UsageError

    found = hit()
    if found is None:
        raise UsageError(
            f"the build of {plan.package} {plan.version} for recipe {plan.recipe} finished already, "
            "and its wheel is no longer in the cache",
            "run the same command without --resume to build it again",
        )
    note = f"nothing to resume: the build finished already; its wheel is {found.wheel}"
    console.print(note, markup=False, highlight=False)
    found.notes.append(note)
    return found


def _guard_system_selection(executor: Executor, resolved: ResolvedBuild) -> None:
    """Record the system's gcc selection now and restore it when the build ends, whatever happens."""
    from srcbuild.execute.compiler import SystemSelection

    tree = resolved.compiler.tree
    selection = SystemSelection(tree, log_path=tree.log)
    previous = selection.record()
    executor.console.print(
        f"    system gcc selection before the build: {previous.status or 'none'} {previous.value or ''}"
    )
    installed = resolved.compiler.gcc
    executor.finalizers.append(lambda: selection.restore(installed))
