"""One build from start to end: probe → resolve → plan → cache decision → execute.

``prepare`` is the pure part plus the host probe (``srcbuild.resolve.prepare.resolve_on_host``,
then ``srcbuild.plan.make_plan``); ``srcbuild plan`` prints what it returns and imports nothing of
``srcbuild.execute`` (the execute stage is imported by the functions that run a build).

``run_build`` decides whether anything is built: the local cache first (each hit checked against
its manifest), then each remote (pulled into the local store when the trust policy accepts it). A
hit needs no compiler and no git: the wheel's path is printed and nothing runs. Otherwise the
plan goes to the executor, under two locks (the fingerprint's and the build tree's).

A build of a package is the list of package pipelines ``srcbuild.packages.build_order`` gives,
dependencies first (torchvision, torchaudio: torch's, then its own), run by ``run_build`` in
order; no pipeline starts another. The last one's preflight step runs first (so a refusal comes
before torch is built), then each earlier pipeline (a cache hit, or a build), then the rest of its
own steps, whose torch-wheel step copies the wheel torch's pipeline returned (a ``TorchBuilt``
record).

``run_ext`` is the same decision and execution for an extension build that ``srcbuild.ext.run``
prepared (its fingerprint, the local cache only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from srcbuild.console import show_table
from srcbuild.packages import build_order
from srcbuild.paths import Paths
from srcbuild.plan.make import make_plan
from srcbuild.plan.model import Plan
from srcbuild.plan.render import settings_table
from srcbuild.recipe import Recipe
from srcbuild.records import record
from srcbuild.resolve import BuildOptions, ResolvedBuild
from srcbuild.resolve.prepare import resolve_on_host

if TYPE_CHECKING:  # rich and filelock are imported by a build that prints and locks, not by plan
    import filelock
    from rich.console import Console

    from srcbuild.cache.remotes import CacheRemote
    from srcbuild.cache.signing import TrustPolicy
    from srcbuild.cache.store import WheelCache
    from srcbuild.execute.executor import Executor
    from srcbuild.execute.result import BuildResult
    from srcbuild.ext.run import PreparedExt


@record
class Prepared:
    """A build resolved on this host and its plan: what ``srcbuild plan`` shows and a build runs."""

    resolved: ResolvedBuild
    plan: Plan


def prepare(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    meanwhile: Callable[[], None] | None = None,
) -> Prepared:
    """Probe the host, resolve the build and make its plan (``meanwhile`` runs while the probe
    waits for its programs)."""
    resolved = resolve_on_host(recipe, options, paths, environ, meanwhile=meanwhile)
    return Prepared(resolved, make_plan(resolved))


def _import_build_steps() -> None:
    """Import what the later steps of a build use, while the host probe waits for its programs."""
    import srcbuild.cache.install
    import srcbuild.cache.key
    import srcbuild.execute.executor
    import srcbuild.verify.report  # noqa: F401


@record
class CacheDecision:
    """Whether a build's wheel is in the cache already: the local store, then each remote
    (``--remote``, ``SRCBUILD_REMOTES``), whose entries the trust policy must accept."""

    recipe: Recipe
    plan: Plan
    fingerprint: str
    cache: WheelCache
    remotes: tuple[CacheRemote, ...]
    trust: TrustPolicy
    environ: Mapping[str, str]
    console: Console
    source_commit: str | None = None  # the commit the recipe's tag names here (sources.tagpins.known_commit)

    @classmethod
    def open(
        cls,
        recipe: Recipe,
        plan: Plan,
        fingerprint: str,
        paths: Paths,
        options: BuildOptions,
        environ: Mapping[str, str],
        console: Console,
    ) -> CacheDecision:
        from srcbuild.cache.remotes import RemoteOptions, open_remote, parse_remotes
        from srcbuild.cache.signing import TrustPolicy
        from srcbuild.cache.store import WheelCache

        remote_options = RemoteOptions.resolve(environ=environ)
        remotes = tuple(open_remote(url, remote_options) for url in parse_remotes(options.remotes, environ))
        trust = TrustPolicy.resolve(options.trust_unsigned, environ=environ)
        from srcbuild.packages import package_spec
        from srcbuild.sources.tagpins import known_commit

        commit = known_commit(package_spec(plan.package).pin(recipe), plan.checkout, paths.git_cache_dir)
        cache = WheelCache(paths.cache_dir)
        return cls(recipe, plan, fingerprint, cache, remotes, trust, environ, console, commit)

    def hit(self) -> BuildResult | None:
        """The cached wheel as a finished build's result, or None: it must be built."""
        from srcbuild.cache.install import find_wheel
        from srcbuild.execute.result import BuildResult, CachedWheel

        console = self.console

        def warn(message: str) -> None:
            console.print(f"warning: {message}", markup=False, highlight=False)

        # each local hit is checked against its manifest; a failing remote is a warning; a hit of
        # a remote is pulled into the local store
        found = find_wheel(
            self.cache,
            self.recipe,
            self.plan.package,
            list(self.remotes),
            self.fingerprint,
            self.trust,
            warn,
            environ=self.environ,
            source_commit=self.source_commit,
        )
        if found is None:
            return None
        where = "" if found.origin == "local" else f" from {found.origin}"
        console.print(
            f"cache hit{where}: {found.entry.wheel_path.name} (fingerprint {self.fingerprint[:12]}); nothing to build"
        )
        entry = found.entry
        return BuildResult(
            self.plan,
            wheel=entry.wheel_path,
            cached=True,
            cached_wheel=CachedWheel(entry.wheel_path, entry.manifest.sha256, entry.key),
        )


def run_build(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    console: Console,
    resume: bool = False,
) -> BuildResult:
    """Build ``options.package`` for ``recipe`` (or take it from the cache), after the packages it
    is built against: the package pipelines of ``build_order``, in order; the wheel is in the result."""
    *first, last = build_order(options.package)

    def dependencies(executor: Executor) -> None:
        """The pipelines before the last one, in order, each a cache hit or a build; what each
        returned becomes a record the last one's steps read."""
        for package in first:
            done = _run_package(recipe, replace(options, package=package), paths, environ, console)
            _record_built(executor, done)

    return _run_package(
        recipe, replace(options, package=last), paths, environ, console, resume, dependencies if first else None
    )


def _record_built(executor: Executor, done: BuildResult) -> None:
    """Hand a finished dependency's wheel to the steps of the package built against it."""
    from srcbuild.execute.records import TorchBuilt

    cached = done.cached_wheel  # with its recorded sha256, checked as it is copied
    if done.plan.package == "torch" and cached is not None:
        executor.records.add(TorchBuilt(cached.path, cached.sha256, cached.entry))


def _run_package(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    console: Console,
    resume: bool = False,
    dependencies: Callable[[Executor], None] | None = None,
) -> BuildResult:
    """One package's pipeline: prepare, the cache decision, then its steps; ``dependencies`` (the
    earlier pipelines of the list) runs after its preflight step, before its torch-wheel step,
    unless a resumed run did that step already. A toolchain provisioned by another route than the
    planned one (``toolchain.planned.Rerouted``) plans the build again, once: it finds that prefix."""
    from srcbuild.toolchain.planned import Rerouted

    try:
        return _run_package_once(recipe, options, paths, environ, console, resume, dependencies)
    except Rerouted as moved:
        console.print(f"{moved.message}; planning the build again", markup=False, highlight=False)
        return _run_package_once(recipe, options, paths, environ, console, resume, dependencies)


def _run_package_once(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    console: Console,
    resume: bool = False,
    dependencies: Callable[[Executor], None] | None = None,
) -> BuildResult:
    from srcbuild.execute.context import BuildContext
    from srcbuild.execute.executor import Executor, environ_for_build
    from srcbuild.resolve.key import build_fingerprint

    prepared = prepare(recipe, options, paths, environ, meanwhile=_import_build_steps)
    plan, resolved = prepared.plan, prepared.resolved
    console.print(f"[bold]srcbuild {plan.package} {plan.version} (recipe {plan.recipe})[/bold]")
    show_table(settings_table(plan.settings), console)
    fp = build_fingerprint(resolved)
    decision = CacheDecision.open(recipe, plan, fp, paths, options, environ, console)

    only_canary = options.canary == "only" and "canary" in plan.step_ids
    if not resume and not only_canary:
        found = decision.hit()
        if found is not None:
            return found
    # Two locks: the fingerprint's (concurrent builds of the same inputs build once) and the
    # tree's (builds that share a checkout and build tree, such as two recipe files with one
    # name, take turns instead of writing into one tree at once).
    with decision.cache.build_lock(fp), tree_lock(plan, paths, console):
        if not resume and not only_canary:
            found = decision.hit()  # another build of the same inputs may have finished meanwhile
            if found is not None:
                return found
        elif resume and _finished(plan):
            return _already_done(plan, decision, console)
        ctx = BuildContext(resolved=resolved)
        executor = Executor(plan, console=console, environ=environ_for_build(environ), resume=resume, context=ctx)
        if plan.system_alternatives:
            _guard_system_selection(executor, resolved)
        with executor.running():
            if dependencies is not None:
                # the steps before the torch wheel (preflight: refuse before building torch), then
                # the earlier pipelines, unless this step was done by the run being resumed
                executor.run_steps(until="torch-wheel")
                if executor.pending("torch-wheel"):
                    dependencies(executor)
            if only_canary:  # --canary: stop after it (the build tree is kept for the build that follows)
                ids = plan.step_ids
                after = ids[ids.index("canary") + 1] if ids.index("canary") + 1 < len(ids) else None
                executor.run_steps(until=after)
            else:
                executor.run_steps()
        return executor.result


def read_ext_torch(prepared: PreparedExt, environ: Mapping[str, str], console: Console) -> PreparedExt:
    """An extension build against ``--torch VERSION``: its plan's fetch-torch step runs first, since
    the cache key holds the wheel's identity (``ext.run.with_fetched_torch``); the findings that
    need no wheel stop a build that cannot work before the download. What was read of a torch wheel
    is remembered for the next command (``ext.torch.remember``; ``plan`` writes nothing)."""
    from srcbuild.execute.progress import Heartbeat
    from srcbuild.ext.preflight import refusal
    from srcbuild.ext.run import with_fetched_torch
    from srcbuild.ext.torch import remember
    from srcbuild.findings import Severity

    fetch = prepared.build.fetch
    memo = prepared.build.base.paths.work_dir / "torch-identity"
    if fetch is None or not prepared.torch_deferred:
        if prepared.identity is not None:
            remember(prepared.identity, memo)
        return prepared
    stop = refusal(prepared.findings, prepared.build.base.options.ignore_preflight)
    if stop is not None:
        for finding in prepared.findings:
            if finding.severity is not Severity.INFO:
                console.print(finding.render(), markup=False, highlight=False)
        raise stop
    console.print(f"fetch-torch: {fetch.filename} from {fetch.url} into {fetch.into} (the cache key holds its "
                  "sha256)", markup=False, highlight=False)
    with Heartbeat(console, "fetch-torch") as beat:  # a CUDA torch is gigabytes: a pipe hears it is alive
        read = with_fetched_torch(prepared, environ, beat.feed)
    assert read.identity is not None
    remember(read.identity, memo)
    return read


def run_ext(prepared: PreparedExt, environ: Mapping[str, str], console: Console, resume: bool = False) -> BuildResult:
    """Build the prepared extension (or take it from the local cache); the wheel is in the result."""
    from srcbuild.cache.store import WheelCache
    from srcbuild.execute.executor import Executor, environ_for_build
    from srcbuild.execute.registry import HANDLERS, SKIP_CHECKS
    from srcbuild.execute.result import BuildResult
    from srcbuild.ext.handlers import EXT_HANDLERS, EXT_SKIP_CHECKS, ExtContext

    b, plan = prepared.build, prepared.plan
    assert prepared.identity is not None and prepared.inputs is not None, "ext.run.with_fetched_torch runs first"
    console.print(f"[bold]srcbuild ext {b.label} (recipe {plan.recipe})[/bold]")
    console.print(f"torch: {prepared.identity.describe()}", markup=False, highlight=False)
    show_table(settings_table(plan.settings), console)
    cache = WheelCache(b.base.paths.cache_dir)
    fp = prepared.fingerprint
    archs = list(b.recipe.gpu.arch) if b.cuda else []

    def hit() -> BuildResult | None:
        entry = cache.lookup(fp, archs)
        if entry is None:
            return None
        console.print(f"cache hit: {entry.wheel_path.name} (fingerprint {fp[:12]}); nothing to build")
        return BuildResult(plan, wheel=entry.wheel_path, cached=True)

    if not resume:
        found = hit()
        if found is not None:
            return found
    with cache.build_lock(fp):
        if not resume:
            found = hit()
            if found is not None:
                return found
        ctx = ExtContext(resolved=b.base, ext=b, identity=prepared.identity, ext_findings=prepared.findings,
                         inputs=prepared.inputs, nvcc_version=prepared.nvcc_version)
        executor = Executor(
            plan,
            console=console,
            environ=environ_for_build(environ),
            resume=resume,
            context=ctx,
            handlers={**HANDLERS, **EXT_HANDLERS},
            skip_checks={**SKIP_CHECKS, **EXT_SKIP_CHECKS},
        )
        return executor.run()


def tree_lock(plan: Plan, paths: Paths, console: Console) -> filelock.FileLock:
    """The lock of the checkout and build tree ``plan`` works in, keyed by their paths.

    A second build of the same tree waits (saying so) until the first one ends.
    """
    import filelock

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


def _already_done(plan: Plan, decision: CacheDecision, console: Console) -> BuildResult:
    """``--resume`` of a build that finished: nothing to resume; name its wheel."""
    from srcbuild.errors import UsageError

    found = decision.hit()
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
