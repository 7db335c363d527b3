"""One build from start to end: probe the host, make the plan, look in the cache, execute.

``prepare`` does the pure part (plus the host probe) and is what ``srcbuild plan`` prints;
``run_build`` hands that very plan to the executor. A cache hit needs no compiler and no git:
the wheel's path is printed and nothing runs.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import filelock
from rich.console import Console

from srcbuild.execute.actions import ACTIONS, BuildContext
from srcbuild.execute.executor import BuildResult, Executor, environ_for_build
from srcbuild.paths import Paths
from srcbuild.plan.inputs import BuildHost, BuildOptions
from srcbuild.plan.make import make_plan
from srcbuild.plan.model import Plan
from srcbuild.plan.render import render_settings
from srcbuild.recipe import Recipe


@dataclass(frozen=True)
class Prepared:
    plan: Plan
    host: BuildHost
    host_facts: Any  # srcbuild.host.HostFacts


def build_host(recipe: Recipe, facts: Any, environ: Mapping[str, str]) -> BuildHost:
    """The few host facts a plan needs, taken from ``srcbuild.host.probe_host``'s answer."""
    from srcbuild.host.jobs import max_jobs

    gcc = facts.gcc(int(recipe.toolchain.gcc.split(".")[0])) if recipe.toolchain.gcc.split(".")[0].isdigit() else None
    cuda_home, cuda_source = None, "host probe (no matching nvcc found)"
    toolkit = facts.cuda_toolkit(recipe.toolchain.cuda) if recipe.toolchain.cuda is not None else None
    if toolkit is not None:
        cuda_home, cuda_source = toolkit.home, f"host probe ({toolkit.source}: nvcc {toolkit.version})"
    cudnn = facts.cudnn_version(recipe.toolchain.cudnn) if recipe.toolchain.cudnn else None
    cudnn_root = Path(cudnn.header).parent.parent if cudnn is not None else None  # <root>/include/cudnn*.h
    res = facts.resources
    jobs, reason = max_jobs(res.memory_bytes if res else None, res.cores if res else 1)
    path = environ.get("PATH", "")
    ccache = shutil.which("ccache", path=path)
    sccache = shutil.which("sccache", path=path)
    python = shutil.which(f"python{recipe.toolchain.python}", path=path)
    ua = shutil.which("update-alternatives", path=path + ":/usr/sbin:/sbin") or "update-alternatives"
    return BuildHost(
        gcc=Path(gcc.path) if gcc else None,
        gxx=Path(gcc.gxx) if gcc and gcc.gxx else None,
        cuda_home=Path(cuda_home) if cuda_home else None,
        cuda_home_source=cuda_source,
        cudnn_root=cudnn_root,
        ccache=Path(ccache) if ccache else None,
        sccache=Path(sccache) if sccache else None,
        python=Path(python) if python else None,
        max_jobs=jobs,
        max_jobs_reason=reason,
        update_alternatives=ua,
    )


def prepare(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    meanwhile: Callable[[], None] | None = None,
) -> Prepared:
    """Probe the host and make the plan. The probe mostly waits for programs (nvidia-smi, nvcc,
    gcc, docker), so it runs in a thread while this one loads the knowledge base (the plan and
    the preflight read it) and runs ``meanwhile`` (a build imports the modules of its later steps)."""
    from srcbuild.host import probe_host
    from srcbuild.knowledge import load_knowledge

    probe_env = dict(environ)
    chosen = options.cuda_home or environ.get("SRCBUILD_CUDA_HOME")
    if chosen:  # the host checks look at the toolkit the build will use
        probe_env["CUDA_HOME"] = chosen
    found: list[Any] = []
    probe = threading.Thread(
        target=lambda: found.append(probe_host(environ=probe_env, work_dir=paths.work_dir, toolchain_only=True)),
        daemon=True,
    )
    probe.start()
    try:
        load_knowledge()
        if meanwhile is not None:
            meanwhile()
    finally:
        probe.join()
    facts = found[0] if found else probe_host(environ=probe_env, work_dir=paths.work_dir, toolchain_only=True)
    host = dist_jobs(build_host(recipe, facts, environ), recipe, options, paths, environ)
    return Prepared(make_plan(recipe, options, host, paths, environ), host, facts)


def dist_jobs(
    host: BuildHost, recipe: Recipe, options: BuildOptions, paths: Paths, environ: Mapping[str, str]
) -> BuildHost:
    """With an sccache-dist scheduler, the default MAX_JOBS is the cluster's CPUs (its build
    servers compile; this machine only preprocesses), not what this machine's memory allows."""
    if not (options.dist_scheduler or environ.get("SRCBUILD_DIST_SCHEDULER")):
        return host
    from srcbuild.compiler_cache import resolve_compiler_cache
    from srcbuild.compiler_cache.dist import cluster_capacity

    found = {"ccache": host.ccache, "sccache": host.sccache}
    config = resolve_compiler_cache(
        cli_kind=options.compiler_cache,
        cli_url=options.compiler_cache_url,
        cli_dist=options.dist_scheduler,
        recipe_kind=recipe.build.compiler_cache,
        environ=environ,
        work_dir=paths.work_dir,
        which=lambda name: str(found[name]) if found.get(name) else None,
    )
    capacity = cluster_capacity(config, environ) if config.dist_scheduler else None
    if capacity is None or capacity[1] < 1:
        reason = f"{host.max_jobs_reason}; the sccache-dist scheduler {config.dist_scheduler} reported no build servers"
        return replace(host, max_jobs_reason=reason)
    servers, cpus = capacity
    return replace(host, max_jobs=cpus, max_jobs_reason=f"sccache-dist cluster: {servers} build server(s), {cpus} CPUs")


def _import_build_steps() -> None:
    """Import what the later steps of a build use, while the host probe waits for its programs."""
    import srcbuild.cache.install
    import srcbuild.cache.key
    import srcbuild.preflight
    import srcbuild.rules
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
    from srcbuild.cache.key import FingerprintInputs, fingerprint
    from srcbuild.cache.remotes import RemoteOptions, open_remote, parse_remotes
    from srcbuild.cache.signing import TrustPolicy
    from srcbuild.cache.store import WheelCache

    prepared = prepare(recipe, options, paths, environ, meanwhile=_import_build_steps)
    plan = prepared.plan
    console.print(f"[bold]srcbuild {plan.package} {plan.version} (recipe {plan.recipe})[/bold]")
    for line in render_settings(plan.settings):
        console.print(line, markup=False, highlight=False)
    inputs = FingerprintInputs.from_recipe(recipe, plan.package, plan.env.final_values())
    fp = fingerprint(inputs)
    cache = WheelCache(paths.cache_dir)

    remote_options = RemoteOptions.resolve(environ=environ)
    remotes = [open_remote(url, remote_options) for url in parse_remotes(options.remotes, environ)]
    trust = TrustPolicy.resolve(options.trust_unsigned, environ)

    def warn(message: str) -> None:
        console.print(f"warning: {message}", markup=False, highlight=False)

    def hit() -> BuildResult | None:
        # the local store first (each hit checked against its manifest), then each remote (pulled
        # into the local store when a trusted signer vouches for it); a failing remote is a warning
        found = find_wheel(cache, recipe, plan.package, remotes, fp, trust, warn)
        if found is None:
            return None
        where = "" if found.origin == "local" else f" from {found.origin}"
        console.print(f"cache hit{where}: {found.entry.wheel_path.name} (fingerprint {fp[:12]}); nothing to build")
        return BuildResult(plan, wheel=found.entry.wheel_path, cached=True)

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
        from srcbuild.sources.mirrors import parse_mirror_args

        ctx = BuildContext(
            recipe=recipe,
            paths=paths,
            host_facts=prepared.host_facts,
            fingerprint_inputs=inputs,
            mirrors=parse_mirror_args(list(options.mirrors), environ),
        )
        if plan.package == "torchvision":
            torch_options = replace(options, package="torch")

            def build_torch() -> Path:
                result = run_build(recipe, torch_options, paths, environ, console, resume=False)
                assert result.wheel is not None
                return result.wheel

            ctx.build_torch = build_torch
        executor = Executor(
            plan, ACTIONS, console=console, environ=environ_for_build(environ), resume=resume, context=ctx
        )
        if plan.system_alternatives:
            _guard_system_selection(executor, prepared.host, paths)
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


def _guard_system_selection(executor: Executor, host: BuildHost, paths: Paths) -> None:
    """Record the system's gcc selection now and restore it when the build ends, whatever happens."""
    from srcbuild.execute.compiler import AlternativesTree, SystemSelection

    log = paths.work_dir / "compilers" / "update-alternatives.log"
    tree = AlternativesTree(links_dir=Path("/usr/bin"), log=log, program=host.update_alternatives)
    selection = SystemSelection(tree, log_path=log)
    previous = selection.record()
    executor.console.print(
        f"    system gcc selection before the build: {previous.status or 'none'} {previous.value or ''}"
    )
    installed = host.gcc or Path("/usr/bin/gcc")
    executor.finalizers.append(lambda: selection.restore(installed))
