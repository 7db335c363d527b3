"""Spack's py-torch, py-torchvision and CUDA constraints as a standing oracle: srcbuild's rules give
the verdict Spack gives on every recipe at the edge of one of its constraints, except the documented
ones where a binary (or the fault Spack itself cites) shows Spack wrong or too broad."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib
from rule_combos import catalog, combo

from srcbuild.findings import Severity, has_errors
from srcbuild.rules import check_recipe

ORACLE = Path(__file__).resolve().parents[2] / "fixtures" / "oracle" / "spack.toml"
DATA = tomllib.loads(ORACLE.read_text(encoding="utf-8"))
COMBOS: list[dict[str, Any]] = DATA["combo"]


def verdict(recipe: dict[str, Any]) -> tuple[str, list[str]]:
    built = combo(
        "maxwell-cu126",
        torch=recipe["torch"],
        torchvision=recipe.get("torchvision"),
        python=recipe["python"],
        gcc=recipe["gcc"],
        cuda=recipe["cuda"],
        cudnn=recipe.get("cudnn"),
        arch=tuple(recipe["arch"]),
        env=recipe.get("env", {}),
    )
    findings = check_recipe(built, catalog=catalog())
    errors = [f"{f.rule}: {f.message}" for f in findings if f.severity == Severity.ERROR]
    return ("conflict" if has_errors(findings) else "ok"), errors


def test_the_oracle_is_cited_and_large_enough() -> None:
    assert set(DATA["sources"]) == {"py-torch", "py-torchvision", "cuda"}
    assert all("@" in source and len(source.rsplit("@", 1)[1]) == 40 for source in DATA["sources"].values())
    assert len(COMBOS) >= 70 and len({c["id"] for c in COMBOS}) == len(COMBOS)
    for c in COMBOS:
        assert c["spack"] in ("ok", "conflict") and c["constraint"].split(":")[0] in DATA["sources"], c["id"]


@pytest.mark.parametrize("case", COMBOS, ids=[c["id"] for c in COMBOS])
def test_srcbuild_agrees_with_spack_or_documents_why_not(case: dict[str, Any]) -> None:
    found, errors = verdict(case["recipe"])
    expected = case.get("srcbuild", case["spack"])
    assert found == expected, (case["constraint"], errors)
    if "srcbuild" in case:
        assert case["srcbuild"] != case["spack"] and case["evidence"].strip(), case["id"]


def test_the_documented_disagreements() -> None:
    """Three, each with its evidence: cuDNN 9.1 for torch 2.4.1 (the wheel's own Requires-Dist),
    CUDA 11.8 for 9.0 (its ptxas lists sm_90), gcc 10 with CUDA 11.3 (10.3+ is the fault; srcbuild
    provisions 10.2)."""
    disagreements = {c["id"]: c["evidence"] for c in COMBOS if "srcbuild" in c}
    assert sorted(disagreements) == ["arch-cuda11.8-9.0", "cudnn-2.4-9.1", "gcc-cuda11.3-10"]
    torch_241 = "sha256:0b5f88afdfa05a335d80351e3cea57d38e578c8689f751d35e0ff36bce872113"
    nvcc_118 = "sha256:f8e1e995166c884f2f5bf94975d7abb89175363b8712f7f81cd38d0df1b2cd85"
    assert torch_241 in disagreements["cudnn-2.4-9.1"] and nvcc_118 in disagreements["arch-cuda11.8-9.0"]
    agree = sum(1 for c in COMBOS if "srcbuild" not in c)
    assert agree == len(COMBOS) - 3
