"""The layers contract: imports point down, siblings marked independent do not import each other,
and neither packages nor modules import themselves back through others.

The contract is written once, in pyproject.toml's ``[tool.importlinter]`` (CI runs ``lint-imports``
on it beside ruff and mypy; docs/architecture.md draws it). This test reads the same layers and
checks them with its own reading of the source, so the two agree. Every import counts: module
level, inside a function, under ``TYPE_CHECKING``; a function-level import that closes a loop is the
same defect as a module-level one, only hidden. ``from srcbuild.pkg import mod`` also reads
``srcbuild.pkg`` itself (its ``__init__`` runs first), so a package's own modules import their
siblings by their full names.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import srcbuild

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older interpreters only
    import tomli as tomllib

ROOT = Path(srcbuild.__file__).parent
PYPROJECT = ROOT.parent / "pyproject.toml"
CONTRACT = next(
    c
    for c in tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    if c["id"] == "layers"
)


def _layers(contract: dict[str, Any]) -> list[tuple[list[str], bool]]:
    """The contract's layers, highest first: (the top-level names in it, whether they are independent)."""
    out = []
    layers: list[str] = contract["layers"]
    for layer in layers:
        independent = "|" in layer
        names = [n.strip() for n in layer.replace("|", ":").split(":")]
        out.append((names, independent))
    return out


LAYERS = _layers(CONTRACT)


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


def _imports(module: str, source: str, is_package: bool = False) -> Iterator[str]:
    """Every srcbuild module ``module`` imports, at any level of its syntax tree."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
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
                name = f"{base}.{alias.name}"
                targets = [name, base] if name in MODULES else [base]
                for target in filter(None, map(_target, targets)):
                    if target != module:
                        yield target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = _target(alias.name) if alias.name.startswith("srcbuild") else None
                if target and target != module:
                    yield target


GRAPH = {
    module: set(_imports(module, path.read_text(encoding="utf-8"), path.name == "__init__.py"))
    for module, path in MODULES.items()
}


def _top(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def _layer(module: str) -> int:
    top = _top(module)
    if top == "__init__":  # the package itself (its version) is below everything
        return len(LAYERS)
    for index, (names, _) in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"{module}: srcbuild.{top} is in no layer of pyproject.toml's layers contract")


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_imports_point_down() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) < _layer(module)
    )
    assert upward == []


def test_independent_siblings_do_not_import_each_other() -> None:
    across = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) == _layer(module)
        and _top(target) != _top(module)
        and LAYERS[_layer(module)][1]
    )
    assert across == []


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
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
    assert _loops(GRAPH) == []


def test_no_package_imports_itself_back() -> None:
    packages: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        packages.setdefault(_top(module), set()).update(_top(t) for t in targets if _top(t) != _top(module))
    assert _loops(packages) == []


def test_the_loop_finder_finds_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _loops(graph) == [["a", "b", "c"]]


def test_a_package_read_through_its_name_counts_as_its_init() -> None:
    # ``from srcbuild.knowledge import versions`` runs srcbuild/knowledge/__init__.py first
    found = set(_imports("srcbuild.knowledge.load", "def f():\n    from srcbuild.knowledge import versions\n"))
    assert found == {"srcbuild.knowledge.versions", "srcbuild.knowledge"}
    assert set(_imports("srcbuild.knowledge.load", "import srcbuild.knowledge.versions as v\n")) == {
        "srcbuild.knowledge.versions"
    }


def test_lint_imports_keeps_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True) == 0, capsys.readouterr().out


def test_lint_imports_counts_imports_in_functions_and_under_type_checking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The claim the contract rests on: grimp reads every import, not only the module-level ones."""
    from importlinter.cli import lint_imports

    for part in ("toy", "toy/low", "toy/high"):
        (tmp_path / part).mkdir()
        (tmp_path / part / "__init__.py").write_text("")
    (tmp_path / "toy/high/a.py").write_text("from toy.low import b\n")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "toy"\n[[tool.importlinter.contracts]]\nid = "l"\nname = "l"\n'
        'type = "layers"\nlayers = ["toy.high", "toy.low"]\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for up in (
        "def f():\n    from toy.high import a\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.high import a\n",
    ):
        (tmp_path / "toy/low/b.py").write_text(up)
        assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1
        assert "toy.low.b -> toy.high.a" in capsys.readouterr().out
    (tmp_path / "toy/low/b.py").write_text("x = 1\n")
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 0


def test_the_architecture_drawing_is_the_contract() -> None:
    doc = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawing = doc.split("## Layers\n", 1)[1].split("```\n", 2)[1]
    drawn = [" ".join(block.split()) for block in " ".join(drawing.split("\n")).split("▼")]
    assert drawn == [" ".join(layer.split()) for layer in CONTRACT["layers"]]


def test_lint_imports_finds_a_package_cycle_closed_inside_a_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The acyclic contract: two sibling packages importing each other, one of them only in a function."""
    from importlinter.cli import lint_imports

    for part in ("ring", "ring/cache", "ring/verify"):
        (tmp_path / part).mkdir()
        (tmp_path / part / "__init__.py").write_text("")
    (tmp_path / "ring/cache/store.py").write_text("from ring.verify import kernels\n")
    (tmp_path / "ring/verify/kernels.py").write_text("def f():\n    from ring.cache import store\n")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "ring"\n[[tool.importlinter.contracts]]\nid = "a"\nname = "a"\n'
        'type = "acyclic_siblings"\nancestors = ["ring"]\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1
    assert "- .verify -> .cache (1 import)" in capsys.readouterr().out
    (tmp_path / "ring/verify/kernels.py").write_text("x = 1\n")
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 0
