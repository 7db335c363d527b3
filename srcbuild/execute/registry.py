"""Which handler does each typed action of a plan, and which answers each skip condition.

The plan (``srcbuild.plan.actions``) is data; the executor looks up the action's type here. A new
action is a dataclass in ``plan.actions`` plus one entry in ``HANDLERS``
(``tests/unit/execute/test_registry.py`` checks that every action has one).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from srcbuild.execute import handlers, retag
from srcbuild.execute.records import Record
from srcbuild.execute.runner import Runner
from srcbuild.plan import actions as a
from srcbuild.plan.model import Step
from srcbuild.sources import checkout

Handler = Callable[[Runner, Any, Step, Path], Record | None]
SkipCheck = Callable[[Runner, Any], bool]

HANDLERS: dict[type[a.Action], Handler] = {
    a.Preflight: lambda ex, action, step, log: handlers.preflight(ex, log),
    a.TorchWheel: lambda ex, action, step, log: handlers.torch_wheel(ex, action.dest),
    a.SyncSources: lambda ex, action, step, log: handlers.sync_sources(ex, action.sync, step, log),
    a.VerifySources: lambda ex, action, step, log: handlers.verify_sources(ex, action.sync),
    a.ApplyPatches: lambda ex, action, step, log: handlers.apply_patches(ex, action.patches, step, log),
    a.CheckEnv: lambda ex, action, step, log: handlers.check_env(ex, action.prefix, action.python),
    a.EnsureEnv: lambda ex, action, step, log: handlers.ensure_env(ex, log),
    a.Provision: lambda ex, action, step, log: handlers.provision(ex, action.planned, log),
    a.CheckBuildTree: lambda ex, action, step, log: handlers.check_build_tree(ex, action),
    a.CheckLocalChanges: lambda ex, action, step, log: handlers.check_local_changes(ex, action),
    a.CompilerCacheStart: lambda ex, action, step, log: handlers.compiler_cache_start(ex, action.config, log),
    a.CompilerCacheStats: lambda ex, action, step, log: handlers.compiler_cache_stats(ex, action.config),
    a.VerifyWheel: lambda ex, action, step, log: handlers.verify_wheel(ex, action.dist, action.pattern),
    a.RetagWheel: lambda ex, action, step, log: retag.retag_wheel(ex, action.dist, action.pattern, action.python, log),
    a.CacheWheel: lambda ex, action, step, log: handlers.cache_wheel(ex, action),
}

SKIP_CHECKS: dict[type[a.SkipCondition], SkipCheck] = {
    a.SourcesComplete: lambda ex, condition: checkout.is_complete(condition.sync, ex.environ),
    a.PatchesApplied: lambda ex, condition: checkout.patches_applied(condition.patches, ex.environ),
}


def handler_for(action: a.Action, registry: dict[type[a.Action], Handler] = HANDLERS) -> Handler:
    """The handler of ``action``'s type (or of the nearest base class registered)."""
    for kind in type(action).__mro__:
        if kind in registry:
            return registry[kind]
    raise TypeError(f"no handler for the {type(action).__name__} action")  # a srcbuild bug: test_registry


def skip_check_for(
    condition: a.SkipCondition, registry: dict[type[a.SkipCondition], SkipCheck] = SKIP_CHECKS
) -> SkipCheck:
    """The question of ``condition``'s type (or of the nearest base class registered)."""
    for kind in type(condition).__mro__:
        if kind in registry:
            return registry[kind]
    raise TypeError(f"no check for the {type(condition).__name__} skip condition")
