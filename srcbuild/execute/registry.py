"""Which handler does each typed action of a plan, and which answers each skip condition.

The plan (``srcbuild.plan.actions``) is data; the executor looks up the action's type here. A new
action is a dataclass in ``plan.actions`` plus one entry in ``HANDLERS``
(``tests/unit/execute/test_registry.py`` checks that every action has one).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import srcbuild.execute.canary as canary
import srcbuild.execute.handlers as handlers
import srcbuild.execute.retag as retag
from srcbuild.execute.records import Record
from srcbuild.execute.runner import Runner
from srcbuild.plan import actions as a
from srcbuild.plan.model import Step
from srcbuild.sources import checkout

Handler = Callable[[Runner, a.Action, Step, Path], "Record | None"]
SkipCheck = Callable[[Runner, a.SkipCondition], bool]
A = TypeVar("A", bound=a.Action)
C = TypeVar("C", bound=a.SkipCondition)


def on(kind: type[A], handler: Callable[[Runner, A, Step, Path], Record | None]) -> tuple[type[a.Action], Handler]:
    """A registry entry: ``handler`` does the actions of type ``kind`` (and is type-checked as such)."""

    def run(ex: Runner, action: a.Action, step: Step, log: Path) -> Record | None:
        assert isinstance(action, kind), f"{type(action).__name__} is no {kind.__name__}"
        return handler(ex, action, step, log)

    return kind, run


def asks(kind: type[C], check: Callable[[Runner, C], bool]) -> tuple[type[a.SkipCondition], SkipCheck]:
    """A registry entry: ``check`` answers the skip conditions of type ``kind``."""

    def ask(ex: Runner, condition: a.SkipCondition) -> bool:
        assert isinstance(condition, kind), f"{type(condition).__name__} is no {kind.__name__}"
        return check(ex, condition)

    return kind, ask


HANDLERS: dict[type[a.Action], Handler] = dict(
    (
        on(a.Preflight, lambda ex, action, step, log: handlers.preflight(ex, log)),
        on(a.TorchWheel, lambda ex, action, step, log: handlers.torch_wheel(ex, action.dest)),
        on(a.SyncSources, lambda ex, action, step, log: handlers.sync_sources(ex, action.sync, step, log)),
        on(a.VerifySources, lambda ex, action, step, log: handlers.verify_sources(ex, action.sync)),
        on(a.ApplyPatches, lambda ex, action, step, log: handlers.apply_patches(ex, action.patches, step, log)),
        on(a.CheckEnv, lambda ex, action, step, log: handlers.check_env(ex, action.prefix, action.python)),
        on(a.EnsureEnv, lambda ex, action, step, log: handlers.ensure_env(ex, log)),
        on(a.Provision, lambda ex, action, step, log: handlers.provision(ex, action.planned, log)),
        on(a.CheckBuildTree, lambda ex, action, step, log: handlers.check_build_tree(ex, action)),
        on(a.Canary, lambda ex, action, step, log: canary.canary(ex, action, step, log)),
        on(a.CheckLocalChanges, lambda ex, action, step, log: handlers.check_local_changes(ex, action)),
        on(a.CompilerCacheStart, lambda ex, action, step, log: handlers.compiler_cache_start(ex, action.config, log)),
        on(a.CompilerCacheStats, lambda ex, action, step, log: handlers.compiler_cache_stats(ex, action.config)),
        on(a.VerifyWheel, lambda ex, action, step, log: handlers.verify_wheel(ex, action.dist, action.pattern)),
        on(
            a.RetagWheel,
            lambda ex, action, step, log: retag.retag_wheel(ex, action.dist, action.pattern, action.python, log),
        ),
        on(a.CacheWheel, lambda ex, action, step, log: handlers.cache_wheel(ex, action)),
    )
)

SKIP_CHECKS: dict[type[a.SkipCondition], SkipCheck] = dict(
    (
        asks(a.SourcesComplete, lambda ex, condition: checkout.is_complete(condition.sync, ex.environ)),
        asks(a.PatchesApplied, lambda ex, condition: checkout.patches_applied(condition.patches, ex.environ)),
    )
)


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
