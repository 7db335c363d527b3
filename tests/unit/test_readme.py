"""README stays true: it documents every recipe key and leads with the two commands."""

from __future__ import annotations

from pathlib import Path

from srcbuild.recipe.schema import SCHEMA

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_documents_every_recipe_key() -> None:
    for key, spec in SCHEMA.items():
        if isinstance(spec, dict):
            for sub in spec:
                assert f"{sub}" in README, f"{key}.{sub} is not in README's recipe reference"
            assert f"`{key}." in README
        else:
            assert f"`{key}`" in README


def test_readme_leads_with_the_main_job_and_the_tests() -> None:
    head = README.split("\n## ")[0]
    assert "srcbuild torch --recipe kepler-cu92" in head
    assert "bash .ci/run" in head
