"""Every typed action of a plan has a handler, every skip condition a check, and the plan is data."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import srcbuild
from srcbuild.execute.registry import HANDLERS, SKIP_CHECKS
from srcbuild.plan import actions

PLAN_DIR = Path(srcbuild.__file__).parent / "plan"
# what a plan module may never import: the executor, process running, the probes of a checkout or host
FORBIDDEN = ("srcbuild.execute", "srcbuild.proc", "srcbuild.sources.checkout", "srcbuild.resolve.probe")


def _kinds(base: type) -> set[type]:
    return {
        obj
        for _, obj in inspect.getmembers(actions, inspect.isclass)
        if issubclass(obj, base) and obj is not base and obj.__module__ == actions.__name__
    }


def test_every_action_type_has_a_handler() -> None:
    assert _kinds(actions.Action) == set(HANDLERS)


def test_every_skip_condition_has_a_check() -> None:
    assert _kinds(actions.SkipCondition) == set(SKIP_CHECKS)


def test_actions_are_data() -> None:
    for kind in _kinds(actions.Action) | _kinds(actions.SkipCondition):
        assert not hasattr(kind, "run") and not hasattr(kind, "holds"), kind.__name__


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # every level, TYPE_CHECKING too
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_plan_imports_nothing_that_runs_or_probes() -> None:
    found = {
        f"{path.name}: {name}"
        for path in sorted(PLAN_DIR.glob("*.py"))
        for name in _imports(path)
        if name == "subprocess" or any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    }
    assert found == set()


def test_every_extension_action_has_a_handler() -> None:
    from srcbuild.ext import actions as ext_actions
    from srcbuild.ext.handlers import EXT_HANDLERS

    kinds = {
        obj
        for _, obj in inspect.getmembers(ext_actions, inspect.isclass)
        if issubclass(obj, actions.Action) and obj.__module__ == ext_actions.__name__
    }
    assert kinds == set(EXT_HANDLERS)
    assert not any(hasattr(kind, "run") for kind in kinds)
