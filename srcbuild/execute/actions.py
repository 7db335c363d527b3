"""The internal actions a plan names, and the conditions its steps can be skipped on.

Each handler takes the executor and the step; it prints what it finds and raises a
``SrcbuildError`` subclass when the build must stop. The sibling packages do the real work:
``srcbuild.rules``/``srcbuild.preflight`` (checks), ``srcbuild.verify`` (the wheel's kernels),
``srcbuild.cache`` (the wheel store), ``srcbuild.sources`` (patches).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.errors import (
    EnvironmentError_,
    HostError,
    IncompatibleError,
    StepFailed,
    VerificationFailed,
)
from srcbuild.findings import Finding, Severity
from srcbuild.paths import Paths
from srcbuild.plan.model import Step
from srcbuild.recipe import Recipe

if TYPE_CHECKING:
    from srcbuild.execute.executor import Executor


@dataclass
class BuildContext:
    """What the handlers need besides the plan."""

    recipe: Recipe
    paths: Paths
    host_facts: Any  # srcbuild.host.HostFacts
    build_torch: Callable[[], Path] | None = None  # torchvision: get (or build) the torch wheel
    fingerprint_inputs: Any = None  # srcbuild.cache.key.FingerprintInputs
    report: Any = None  # the VerifyReport of the built wheel
    findings: list[Finding] = field(default_factory=list)
    mirrors: Any = None  # srcbuild.sources.mirrors.MirrorRules of the build (for failure messages)
    source_commit: str | None = None  # measured by the sources-check step, recorded by the cache step
    submodule_commits: dict[str, str] | None = None
    local_changes: Any = None  # srcbuild.sources.localdiff.LocalChanges found before the build
    compiler_cache_before: Any = None  # srcbuild.compiler_cache.CacheStats when the build started


def _ctx(ex: Executor) -> BuildContext:
    ctx = ex.context
    assert isinstance(ctx, BuildContext)
    return ctx


def preflight(ex: Executor, step: Step) -> None:
    from srcbuild.preflight import host_findings
    from srcbuild.rules import check_recipe

    ctx = _ctx(ex)
    rules = list(check_recipe(ctx.recipe))
    host = list(host_findings(ctx.recipe, ctx.host_facts, ctx.paths))
    ctx.findings.extend(rules + host)
    for f in rules + host:
        if f.severity is not Severity.INFO:
            ex.console.print(f.render(), markup=False, highlight=False)
    rule_errors = [f for f in rules if f.severity is Severity.ERROR]
    host_errors = [f for f in host if f.severity is Severity.ERROR]
    assert step.action is not None
    if step.action.arg.get("ignore") and (rule_errors or host_errors):
        n = len(rule_errors) + len(host_errors)
        ex.console.print(f"    --ignore-preflight: going on despite {n} error(s); expect the build to fail as they say")
        return
    if rule_errors:
        raise IncompatibleError(
            f"recipe {ctx.recipe.name} breaks {len(rule_errors)} compatibility rule(s): {rule_errors[0].message}",
            rule_errors[0].fix or "change the recipe's pins (srcbuild recipes check shows every finding)",
        )
    if host_errors:
        raise HostError(
            f"this machine cannot build recipe {ctx.recipe.name}: {host_errors[0].message}",
            host_errors[0].fix or "install what is missing (srcbuild doctor lists it)",
        )
    ex.console.print(f"    {len(rules)} rule finding(s), {len(host)} host finding(s), no errors")


def _sync(ex: Executor) -> Any:
    from srcbuild.sources.sync import SourceSync

    ctx = _ctx(ex)
    pin = ctx.recipe.torch if ex.plan.package == "torch" else ctx.recipe.torchvision
    assert pin is not None
    if ctx.mirrors is None:
        return SourceSync(pin, ex.plan.checkout, ctx.paths.git_cache_dir, label=ex.plan.package)
    return SourceSync(pin, ex.plan.checkout, ctx.paths.git_cache_dir, ctx.mirrors, label=ex.plan.package)


def run_sources(ex: Executor, step: Step, log: Path) -> None:
    """Run the sources step's commands that are still pending, holding the object cache's lock.

    The plan lists every command of a sync; ``SourceSync.pending_commands()`` says which are left
    (none when the checkout is complete, the submodule commands when it is at the tag). Those are
    the planned commands' tail, matched by their ``why``, so they keep the plan's mirror arguments.
    """
    from filelock import Timeout

    from srcbuild.sources.diagnose import explain_git_failure

    ctx = _ctx(ex)
    sync = _sync(ex)
    lock = sync.lock()
    try:
        lock.acquire(timeout=0)
    except Timeout:
        ex.console.print(f"    waiting for another sync of {sync.cache.name} to finish (it shares the object cache)")
        lock.acquire()
    try:
        planned = list(step.commands)
        todo = _pending_tail(planned, sync.pending_commands())
        done = planned[: len(planned) - len(todo)]
        if done:
            why = (
                "the checkout is complete"
                if not todo
                else f"{ex.plan.checkout} is already at {sync.pin.tag}; its submodules are synced next"
            )
            ex.console.print(f"    skipping {len(done)} of {len(planned)} command(s): {why}")
            for cmd in done:
                ex.console.print(f"[dim]    skipped: {cmd.shell()[:120]}[/dim]", highlight=False)
        rules = ctx.mirrors if ctx.mirrors is not None else sync.mirrors

        def explain(cmd: Command, result: proc.RunResult) -> StepFailed:
            failure = explain_git_failure(cmd, result.tail, rules, ex.plan.package, log)
            # newer git names a submodule by its absolute path: show it relative to the checkout
            return StepFailed(failure.message.replace(f" {ex.plan.checkout}/", " "), failure.hint)

        for cmd in todo:
            ex.run_command(step, cmd, log, explain=explain)
    finally:
        lock.release()


def _pending_tail(planned: list[Command], pending: list[Command]) -> list[Command]:
    """The planned commands that are still pending: the tail whose reasons match ``pending``'s."""
    if not pending:
        return []
    if len(pending) <= len(planned):
        tail = planned[len(planned) - len(pending) :]
        if [c.why for c in tail] == [c.why for c in pending]:
            return tail
    return planned


def verify_sources(ex: Executor, step: Step) -> None:
    ctx = _ctx(ex)
    sync = _sync(ex)
    commit = sync.verify_commit()
    commits = sync.complete_commits()  # is_complete() and submodule_commits() from one git status
    if commits is None:
        raise StepFailed(
            f"{ex.plan.checkout} is not complete: a submodule is missing or not at its recorded commit",
            "fetch through a mirror (--mirror gitee or --mirror PREFIX=REPLACEMENT) and rerun",
        )
    ctx.source_commit, ctx.submodule_commits = commit, commits
    ex.console.print(f"    {ex.plan.package} at {commit[:12]}, {len(commits)} submodule(s) checked out")


def sources_complete(ex: Executor, step: Step) -> bool:
    """the checkout is already at the tag with every submodule (its build tree is kept)"""
    return bool(_sync(ex).is_complete())


def check_env(ex: Executor, step: Step) -> None:
    assert step.action is not None
    prefix = Path(step.action.arg["prefix"]).expanduser().resolve()
    python = prefix / "bin" / "python"
    kind = "conda" if (prefix / "conda-meta").is_dir() else "venv" if (prefix / "pyvenv.cfg").is_file() else None
    if kind is None or not python.exists():
        # what srcbuild.envs accepts as --env; it raises the UsageError that says what is wrong
        # (imported only then: the environments package is not needed to use a good one)
        from srcbuild.envs.prefix import existing_env

        env = existing_env(prefix)
        kind, python = env.backend.replace("existing ", ""), env.python
    want = step.action.arg["python"]
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


def ensure_env(ex: Executor, step: Step) -> None:
    from srcbuild.envs.backends import choose_backend
    from srcbuild.envs.spec import env_spec_for

    ctx = _ctx(ex)
    assert step.action is not None
    if step.action.arg.get("error"):
        raise HostError(step.action.arg["error"], step.action.arg.get("hint") or None)
    link = Path(step.action.arg["link"])
    spec = env_spec_for(ctx.recipe, environ=ex.environ)
    backend = choose_backend(step.action.arg["backend"], spec, ex.environ)
    log = ex.log_path(ex.plan.step_ids.index(step.id) + 1, step)
    lockfile = step.action.arg.get("lockfile") or None
    env = backend.ensure(spec, ctx.paths.envs_dir, Path(lockfile) if lockfile else None, log)
    if Path(env.prefix) != link:
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.exists():
            shutil.rmtree(link)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(env.prefix, target_is_directory=True)
    state = "reused" if env.reused else f"made in {env.seconds:.1f}s"
    ex.console.print(f"    {backend.name} environment {env.prefix} ({state})")


def check_build_tree(ex: Executor, step: Step) -> None:
    assert step.action is not None
    args = step.action.arg
    digest, hash_file, cache = args["hash"], Path(args["hash_file"]), Path(args["cache"])
    stored = hash_file.read_text().strip() if hash_file.is_file() else None
    if cache.is_file() and stored != digest:
        why = "no record of its settings" if stored is None else f"settings hash {stored} != {digest}"
        ex.console.print(f"    {cache} was configured with other settings ({why}): cleaning it first")
        build = ex.plan.step("build")
        for cleanup in build.on_failure:
            result = proc.run(cleanup.argv, cwd=cleanup.cwd, env=ex.command_env(cleanup))
            if not result.ok:
                raise StepFailed(f"cleaning the stale build tree failed ({cleanup.shell()})", "remove build/ by hand")
        stale_dir = cache.parent
        if stale_dir.exists():
            shutil.rmtree(stale_dir)
    elif cache.is_file():
        ex.console.print("    the existing build tree was configured with these settings: reusing it")
    hash_file.parent.mkdir(parents=True, exist_ok=True)
    hash_file.write_text(digest + "\n")


def _local_changes(ex: Executor) -> Any:
    from srcbuild.sources.localdiff import local_changes

    ctx = _ctx(ex)
    patches = ctx.recipe.build.patch_files if ex.plan.package == "torch" else ()
    submodules = sorted(_sync(ex).submodule_commits())
    return local_changes(ex.plan.checkout, tuple(patches), submodules, ex.environ)


def check_local_changes(ex: Executor, step: Step) -> None:
    ctx = _ctx(ex)
    changes = _local_changes(ex)
    ctx.local_changes = changes
    if not changes.modified:
        ex.console.print("    the checkout is the tag plus the recipe's patches: no local modifications")
        return
    ex.console.print(
        f"    warning: {len(changes.files)} locally modified file(s): {changes.summary()}; the wheel is "
        "cached as modified (cache push needs --allow-modified)",
        markup=False,
        highlight=False,
    )


def _cc_config(step: Step) -> Any:
    from srcbuild.compiler_cache import CompilerCacheConfig

    assert step.action is not None
    args = {k: v or None for k, v in step.action.args}
    return CompilerCacheConfig(**args)  # type: ignore[arg-type]


def _cc_read(ex: Executor, config: Any, env: dict[str, str]) -> Any:
    from srcbuild.compiler_cache import kind_module

    kind = kind_module(config.kind)
    out = proc.probe(kind.stats_argv(config), env=env, timeout=60)
    if out is None:
        raise StepFailed(f"{config.kind} did not report its counters", f"run `{config.kind} --show-stats` by hand")
    return kind.parse_stats(out)


def compiler_cache_start(ex: Executor, step: Step) -> None:
    from srcbuild.compiler_cache import kind_module

    config = _cc_config(step)
    kind = kind_module(config.kind)
    env = ex.plan.env.apply(ex.environ)
    if config.dist_scheduler:
        from srcbuild.compiler_cache.dist import write_client_config

        path = write_client_config(config, ex.environ)
        ex.console.print(f"    sccache-dist client of {config.dist_scheduler} (configuration {path})")
    stop = kind.stop_argv(config)
    if stop is not None:
        proc.probe(stop, env=env, timeout=60)  # none may be running: that is fine
    log = ex.log_path(ex.plan.step_ids.index(step.id) + 1, step)
    for argv in kind.start_argv(config):
        result = proc.run(argv, env=env, log_path=log)
        if not result.ok:
            said = "; ".join(line for line in result.tail[-3:] if line.strip())
            raise StepFailed(f"{config.kind} did not start: {said}", f"read {log}, or build with --compiler-cache none")
    _ctx(ex).compiler_cache_before = _cc_read(ex, config, env)
    ex.console.print(f"    {config.label()} ready")


def compiler_cache_stats(ex: Executor, step: Step) -> None:
    from srcbuild.compiler_cache import kind_module

    config = _cc_config(step)
    env = ex.plan.env.apply(ex.environ)
    stats = _cc_read(ex, config, env).minus(_ctx(ex).compiler_cache_before)
    stop = kind_module(config.kind).stop_argv(config)
    if stop is not None:
        proc.probe(stop, env=env, timeout=60)
    ex.result.compiler_cache = stats.to_json() | {"url": config.url, "dist_scheduler": config.dist_scheduler}
    ex.console.print(f"    compiler cache {stats.summary()}")


def _find_wheel(step: Step) -> Path:
    assert step.action is not None
    dist, pattern = Path(step.action.arg["dist"]), step.action.arg["pattern"]
    found = sorted(dist.glob(pattern), key=lambda p: p.stat().st_mtime)
    if not found:
        raise StepFailed(f"the build made no wheel matching {dist / pattern}", "read the build step's log")
    return found[-1]


def verify_wheel_action(ex: Executor, step: Step) -> None:
    from srcbuild.verify.report import verify_wheel

    ctx = _ctx(ex)
    wheel = _find_wheel(step)
    report = verify_wheel(wheel, ctx.recipe, ctx.recipe.gpu.arch)
    ctx.report = report
    for row in report.coverage_rows():
        verdict = "runs" if row.get("runs") else "does NOT run"
        ex.console.print(f"    compute capability {row.get('cc')}: {verdict} ({row.get('via') or 'no kernels'})")
    for f in report.findings:
        if f.severity is not Severity.INFO:
            ex.console.print(f.render(), markup=False, highlight=False)
    if not report.ok:
        raise VerificationFailed(
            f"{wheel.name} does not hold what recipe {ctx.recipe.name} asks for: {report.errors[0].message}",
            report.errors[0].fix or "the wheel was not cached; see srcbuild verify for the full report",
        )
    ex.console.print(f"    {wheel.name}: kernels match the recipe")


def cache_wheel(ex: Executor, step: Step) -> None:
    from srcbuild.cache.key import ResolvedFacts
    from srcbuild.cache.manifest import Manifest
    from srcbuild.cache.store import WheelCache
    from srcbuild.verify.symbols import glibc_text, wheel_glibc

    ctx = _ctx(ex)
    wheel = _find_wheel(step)
    kernels = ctx.report.kernels if ctx.report is not None else None
    if ctx.source_commit is None or ctx.submodule_commits is None:  # sources-check ran in an earlier run
        head = proc.probe(["git", "-C", str(ex.plan.checkout), "rev-parse", "HEAD"])
        ctx.source_commit = head.strip() if head else None
        ctx.submodule_commits = _sync(ex).submodule_commits()
    # modifications found before the build count even if undone since; otherwise look now (a
    # resumed build skips the earlier step, and the sources may have been edited in between)
    changes = ctx.local_changes if ctx.local_changes is not None and ctx.local_changes.modified else None
    changes = changes or _local_changes(ex)
    if changes.modified:
        ex.console.print(f"    built from modified sources: {changes.summary()}", markup=False, highlight=False)
    variables = ex.plan.env.final_values()
    gcc = _measured_gcc(ctx, Path(variables["CC"])) if variables.get("CC") else None
    nvcc = _measured_nvcc(ctx, Path(variables["CUDA_HOME"])) if variables.get("CUDA_HOME") else None
    resolved = ResolvedFacts.create(
        source_commit=ctx.source_commit,
        submodule_commits=ctx.submodule_commits,
        gcc_version=gcc,
        nvcc_version=nvcc,
        arch=tuple(str(cc) for cc in ctx.recipe.gpu.arch),
        extra={"source_diff": changes.diff_sha256} if changes.modified else None,
    )
    manifest = Manifest.create(
        wheel,
        ctx.fingerprint_inputs,
        resolved,
        recipe=ctx.recipe.to_json(),
        toolchain={
            "gcc": gcc or ctx.recipe.toolchain.gcc,
            "cuda": nvcc or ctx.recipe.toolchain.cuda or "none",
        },
        sass=sorted(kernels.sass) if kernels is not None else (),
        ptx=sorted(kernels.ptx) if kernels is not None else (),
        local_version=ctx.recipe.local_version(),
        changes=changes.to_json() if changes.modified else None,
        glibc_needed=glibc_text(wheel_glibc(wheel)),
    )
    build_log = ex.log_path(ex.plan.step_ids.index("build") + 1, ex.plan.step("build"))
    entry = WheelCache(ctx.paths.cache_dir).store(wheel, manifest, build_log if build_log.is_file() else None)
    ex.result.wheel = entry.wheel_path
    ex.console.print(f"    stored {entry.wheel_path}")


def _measured_gcc(ctx: BuildContext, cc: Path) -> str | None:
    """The version of the gcc ``cc`` links to: the host probe already ran it, else run it now."""
    from srcbuild.host.toolchain import gcc_version

    target = cc.resolve()
    for g in getattr(ctx.host_facts, "gccs", ()):
        if Path(g.path).resolve() == target:
            return str(g.version)
    return gcc_version(cc)


def _measured_nvcc(ctx: BuildContext, cuda_home: Path) -> str | None:
    """The version of ``cuda_home``'s nvcc: the host probe already ran it, else run it now."""
    from srcbuild.host.toolchain import nvcc_version

    home = cuda_home.resolve()
    for tk in getattr(ctx.host_facts, "cuda_toolkits", ()):
        if Path(tk.home).resolve() == home:
            return str(tk.version)
    return nvcc_version(cuda_home / "bin" / "nvcc")


def torch_wheel(ex: Executor, step: Step) -> None:
    ctx = _ctx(ex)
    assert step.action is not None and ctx.build_torch is not None
    wheel = ctx.build_torch()
    dest = Path(step.action.arg["dest"])
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy2(wheel, dest / wheel.name)
    ex.console.print(f"    torch wheel: {wheel}")


def patches_applied(ex: Executor, step: Step) -> bool:
    """every patch is already applied to the checkout"""
    from srcbuild.sources.patches import PatchSet

    ctx = _ctx(ex)
    patches = PatchSet(ex.plan.checkout, tuple(ctx.recipe.build.patch_files), tuple(ctx.recipe.build.patches))
    return bool(patches.applied())


ACTIONS: dict[str, Callable[..., Any]] = {
    "preflight": preflight,
    "verify-sources": verify_sources,
    "commands:sources": run_sources,
    "check-env": check_env,
    "ensure-env": ensure_env,
    "check-build-tree": check_build_tree,
    "check-local-changes": check_local_changes,
    "compiler-cache-start": compiler_cache_start,
    "compiler-cache-stats": compiler_cache_stats,
    "verify-wheel": verify_wheel_action,
    "cache-wheel": cache_wheel,
    "torch-wheel": torch_wheel,
    "condition:patches-applied": patches_applied,
    "condition:sources-complete": sources_complete,
}
