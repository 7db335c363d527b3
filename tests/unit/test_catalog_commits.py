"""Every catalog recipe pins the commit of every tag it builds, and docs/sources.md cites it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").glob("*.toml"))


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_every_tag_of_a_catalog_recipe_pins_its_commit(path: Path) -> None:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cited = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    for table, value in data.items():
        if not isinstance(value, dict) or "tag" not in value:
            continue
        commit = value.get("commit")
        assert isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit), (path.name, table)
        assert f"| {table} {value['tag']} | `{commit}` |" in cited, (path.name, table, "not in docs/sources.md")
