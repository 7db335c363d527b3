"""The layers contract: imports point down, and no module imports itself back through others.

Every import counts: module level, inside a function, under ``TYPE_CHECKING``. A function-level
import that closes a loop is the same defect as a module-level one, only hidden; a type-only
import still says one layer knows the other's types.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import srcbuild

ROOT = Path(srcbuild.__file__).parent

# highest first; a module may import its own layer and the layers below it
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "__main__"),
    ("pipeline",),
    ("execute", "ext"),
    ("plan",),
    ("resolve",),
    (
        "rules",
        "toolchain",
        "host",
        "envs",
        "sources",
        "compiler_cache",
        "cache",
        "verify",
        "advice",
        "container",
        "mirror",
        "factscan",
        "work",
        "canary",
    ),
    ("knowledge", "recipe"),
    (
        "__init__",
        "errors",
        "proc",
        "files",
        "paths",
        "precedence",
        "tables",
        "capability",
        "config",
        "console",
        "command",
        "envmods",
        "findings",
        "records",
    ),
)

# Imports that still point up, each with why it is not fixed yet. The test fails when one goes
# away (remove it here) as well as when a new one appears.
KNOWN_UPWARD: set[tuple[str, str]] = set()
# Loops between modules, with why (none).
KNOWN_LOOPS: list[list[str]] = []


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _target(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> Iterator[str]:
    """Every srcbuild module ``module`` imports, at any level of its syntax tree."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            if not base.startswith("srcbuild"):
                continue
            for alias in node.names:
                target = _target(f"{base}.{alias.name}") if f"{base}.{alias.name}" in MODULES else _target(base)
                if target and target != module:
                    yield target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = _target(alias.name) if alias.name.startswith("srcbuild") else None
                if target and target != module:
                    yield target


GRAPH = {module: set(_imports(module, path)) for module, path in MODULES.items()}


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for index, names in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"{module}: srcbuild.{top} is in no layer of LAYERS; add it where it belongs")


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_imports_point_down() -> None:
    upward = {
        (module, target)
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) < _layer(module)
    }
    assert upward == KNOWN_UPWARD


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(loops)


def test_no_module_imports_itself_back() -> None:
    assert _loops(GRAPH) == KNOWN_LOOPS


def test_the_loop_finder_finds_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _loops(graph) == [["a", "b", "c"]]
