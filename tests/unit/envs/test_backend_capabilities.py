"""Environment backends are asked what they can do, never compared by name outside their registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import srcbuild
from srcbuild.envs.backends import BACKEND_CLASSES, BACKEND_NAMES, installs_conda_packages
from srcbuild.errors import UsageError

ROOT = Path(srcbuild.__file__).parent
NAMES = "|".join(BACKEND_NAMES)
# `backend == "venv"`, `env.backend != "rattler"`, `backend.name in ("conda", ...)`
BY_NAME = re.compile(rf"backend(?:\.name)?\s*(?:[!=]=|not in|in)\s*[(\[]?\s*\"({NAMES})\"")


def test_every_backend_says_whether_it_installs_conda_packages() -> None:
    for name, backend in BACKEND_CLASSES.items():
        assert isinstance(backend.conda_packages, bool), name
    assert [n for n in BACKEND_NAMES if not installs_conda_packages(n)] == ["venv"]
    with pytest.raises(UsageError, match="unknown environment backend 'pixi'"):
        installs_conda_packages("pixi")


def test_no_module_outside_the_registry_compares_a_backend_by_name() -> None:
    registry = ROOT / "envs" / "backends"
    found = [
        f"{path.relative_to(ROOT.parent)}:{number}: {line.strip()}"
        for path in sorted(ROOT.rglob("*.py"))
        if registry not in path.parents
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BY_NAME.search(line)
    ]
    assert found == [], "ask the backend (EnvBackend.conda_packages, installs_conda_packages) instead"


def test_the_name_finder_finds_a_comparison() -> None:
    assert BY_NAME.search('        if env.backend != "venv":')
    assert BY_NAME.search('    if backend is not None and backend.name == "venv":')
    assert not BY_NAME.search("    if not backend.conda_packages:")
