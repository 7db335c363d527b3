"""Release tags that never existed, tags newer than the knowledge base, and MPI switched off: one
bad-pin fixture per rule (tests/fixtures/combos)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.findings import Severity
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.rules import check_recipe

COMBOS = Path(__file__).resolve().parents[2] / "fixtures" / "combos"


def findings(name: str) -> list[tuple[str, str, str, str]]:
    paths = Paths.resolve(environ=os.environ)
    catalog = RecipeCatalog(paths)
    recipe = catalog.load(str(COMBOS / f"{name}.toml"))
    return [
        (f.rule, f.severity.value, f.message, f.fix)
        for f in check_recipe(recipe, load_knowledge(), catalog.load_all())
        if f.severity is not Severity.INFO
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "torch-v1.10.3",
            [
                (
                    "torch-tag-never-released",
                    "error",
                    "torch v1.10.3 was never released: the 1.10 line ended at v1.10.2.",
                    "Use v1.10.2 or v1.11.0.",
                )
            ],
        ),
        (
            "torchvision-v0.8.3",
            [
                (
                    "torchvision-tag-never-released",
                    "error",
                    "torchvision v0.8.3 was never released: the 0.8 line ended at v0.8.2.",
                    "Use v0.8.2 or v0.9.0.",
                )
            ],
        ),
        (
            "mpi-use-mpi-0",
            [
                (
                    "mpi-switched-off",
                    "error",
                    "[mpi] enabled asks for torch.distributed's MPI backend, but USE_MPI=0 in [build] env builds "
                    "the wheel without it.",
                    "Remove USE_MPI from [build] env, or set [mpi] enabled = false.",
                )
            ],
        ),
        (
            "mpi-use-distributed-0",
            [
                (
                    "mpi-switched-off",
                    "error",
                    "[mpi] enabled asks for torch.distributed's MPI backend, but USE_DISTRIBUTED=0 in [build] env "
                    "builds the wheel without it.",
                    "Remove USE_DISTRIBUTED from [build] env, or set [mpi] enabled = false.",
                )
            ],
        ),
        (
            "torch-newer-than-knowledge",
            [
                (
                    "torch-newer-than-knowledge",
                    "warning",
                    "torch v2.16.0 is newer than srcbuild's knowledge (last checked 2026-11-28), which ends at "
                    "v2.15.0; its toolchain ranges are not checked.",
                    "Pin v2.15.0 or older, or check torch v2.16.0's requirements by hand.",
                ),
                (
                    "torchvision-newer-than-knowledge",
                    "warning",
                    "torchvision v0.30.0 is newer than srcbuild's knowledge (last checked 2026-11-28), which ends at "
                    "v0.29.2; its toolchain ranges are not checked.",
                    "Pin v0.29.2 or older, or check torchvision v0.30.0's requirements by hand.",
                ),
            ],
        ),
    ],
)
def test_each_new_rule_on_its_fixture(name: str, expected: list[tuple[str, str, str, str]]) -> None:
    assert findings(name) == expected


def test_a_line_that_never_existed_names_its_neighbours() -> None:
    errors = [f for f in findings("torch-v1.14.0") if f[1] == "error"]
    assert errors == [
        (
            "torch-tag-never-released",
            "error",
            "torch v1.14.0 was never released: there is no 1.14 line (v1.13.1 was followed by v2.0.0).",
            "Use v1.13.1 or v2.0.0.",
        )
    ]
