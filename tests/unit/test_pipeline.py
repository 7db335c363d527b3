"""The orchestrator's shape: ``srcbuild plan`` reaches the pipeline without importing the execute stage."""

from __future__ import annotations

import ast
from pathlib import Path

import srcbuild

ROOT = Path(srcbuild.__file__).parent


def _module_level_imports(tree: ast.Module) -> set[str]:
    """The modules a module imports when it is imported: not inside functions, not under TYPE_CHECKING."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def _imports_in(node: ast.AST) -> set[str]:
    return {n.module for n in ast.walk(node) if isinstance(n, ast.ImportFrom) and n.module}


def test_the_pipeline_imports_the_execute_stage_only_to_run_a_build() -> None:
    tree = ast.parse((ROOT / "pipeline.py").read_text(encoding="utf-8"))
    assert not {m for m in _module_level_imports(tree) if m.startswith(("srcbuild.execute", "srcbuild.ext"))}
    assert _imports_in(_function(tree, "prepare")) == set()


def test_the_plan_command_prepares_through_the_pipeline() -> None:
    tree = ast.parse((ROOT / "cli" / "plan.py").read_text(encoding="utf-8"))
    plan = _imports_in(_function(tree, "plan_command"))
    assert "srcbuild.pipeline" in plan
    assert not {m for m in plan | _module_level_imports(tree) if m.startswith("srcbuild.execute")}

