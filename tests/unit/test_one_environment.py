"""One environment per command: only the command line reads ``os.environ``.

``srcbuild.cli`` reads the process environment once (after the config file is applied) and passes
that mapping down; every other module takes the mapping it is given. This walks the syntax tree of
every module outside ``srcbuild/cli/`` and fails on any use of ``os.environ``, ``os.getenv``,
``os.putenv``, ``os.unsetenv`` or ``os.environb`` (also through ``from os import ...`` or an alias
of ``os``). ``ALLOWED`` names the few exceptions and why.
"""

from __future__ import annotations

import ast
from pathlib import Path

import srcbuild

ROOT = Path(srcbuild.__file__).parent
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
ALLOWED = {
    # a script run by the smoke test's throwaway venv under torchrun/mpirun, in each rank's own
    # process: the rank variables the launcher sets are its input (it never runs inside srcbuild)
    "verify/ddp_step.py",
    # the console script: `srcbuild --help` alone is printed before srcbuild.cli is imported, at the
    # width click would read (COLUMNS first); `srcbuild install` asks srcbuild.quick_hit, with the
    # process environment its records are keyed by, before srcbuild.cli is imported
    "__main__.py",
}


def environment_reads(source: str) -> list[int]:
    """Line numbers where ``source`` touches the process environment through ``os``."""
    tree = ast.parse(source)
    os_names = {"os"}
    env_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {a.asname or a.name for a in node.names if a.name == "os"}
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            env_names |= {a.asname or a.name for a in node.names if a.name in ENV_NAMES}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENV_NAMES:
            if isinstance(node.value, ast.Name) and node.value.id in os_names:
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            if any(a.name in ENV_NAMES for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id in env_names:
            lines.append(node.lineno)
    return sorted(set(lines))


def test_only_the_command_line_reads_the_process_environment() -> None:
    found = []
    for module in sorted(ROOT.rglob("*.py")):
        rel = module.relative_to(ROOT).as_posix()
        if rel.startswith("cli/") or rel in ALLOWED:
            continue
        found += [f"srcbuild/{rel}:{n}" for n in environment_reads(module.read_text(encoding="utf-8"))]
    assert found == []


def test_every_allowed_module_still_exists_and_still_needs_it() -> None:
    for rel in ALLOWED:
        assert environment_reads((ROOT / rel).read_text(encoding="utf-8")), rel


def test_the_check_sees_every_way_of_reading_it() -> None:
    assert environment_reads("import os\nx = os.environ.get('A')\n") == [2]
    assert environment_reads("import os as o\n\ndef f():\n    return o.getenv('A')\n") == [4]
    assert environment_reads("from os import environ as e\ny = dict(e)\n") == [1, 2]
    assert environment_reads("import os\nos.putenv('A', '1')\n") == [2]
    # a mapping passed in under the same name, and the word in a docstring, are fine
    assert environment_reads('"""reads no os.environ"""\ndef f(environ):\n    return environ.get("A")\n') == []
