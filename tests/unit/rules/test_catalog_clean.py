"""The catalog follows its own advice: no recipe trips a warning of the rules, and every section,
rule or breakage a recipe comment cites exists."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from srcbuild.findings import Severity
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.rules import check_recipe

ROOT = Path(__file__).resolve().parents[3]
RECIPES = sorted((ROOT / "recipes").glob("*.toml"))


def catalog() -> list:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load_all()


@pytest.mark.parametrize("name", [p.stem for p in RECIPES])
def test_no_catalog_recipe_trips_its_own_warnings(name: str) -> None:
    recipes = catalog()
    recipe = next(r for r in recipes if r.name == name)
    loud = [f for f in check_recipe(recipe, load_knowledge(), recipes) if f.severity is not Severity.INFO]
    assert loud == []


def _comments(path: Path) -> str:
    return "\n".join(line for line in path.read_text().splitlines() if line.lstrip().startswith("#"))


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_recipe_comments_cite_what_exists(path: Path) -> None:
    text = _comments(path)
    assert "compat.md" not in text
    for doc, heading in re.findall(r"(docs/[\w-]+\.md) \"([^\"]+)\"", text):
        headings = re.findall(r"^#+ (.+)$", (ROOT / doc).read_text(), flags=re.M)
        assert heading in headings, (doc, heading)
    rules_doc = (ROOT / "docs" / "compatibility.md").read_text()
    for rule in re.findall(r"rule `([\w-]+)`", text):
        assert f"`{rule}`" in rules_doc, rule
    breakage_ids = {b.id for b in load_knowledge().breakages}
    for breakage in re.findall(r"breakage `([\w-]+)`", text):
        assert breakage in breakage_ids, breakage
    for data in re.findall(r"srcbuild/knowledge/data/[\w]+\.toml", text):
        assert (ROOT / data).exists(), data
