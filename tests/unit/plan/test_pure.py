"""The planner is pure: no module of srcbuild.plan reads the environment, looks up PATH or runs anything."""

from __future__ import annotations

import re
from pathlib import Path

import srcbuild.plan

FORBIDDEN = re.compile(r"os\.environ|getenv|shutil\.which|\bproc\.|subprocess|import rattler|load_knowledge|probe_host")


def test_no_plan_module_touches_the_host() -> None:
    found = []
    for module in sorted(Path(srcbuild.plan.__file__).parent.glob("*.py")):
        for n, line in enumerate(module.read_text().splitlines(), 1):
            if FORBIDDEN.search(line.split("#")[0]):
                found.append(f"{module.name}:{n}: {line.strip()}")
    assert found == []
