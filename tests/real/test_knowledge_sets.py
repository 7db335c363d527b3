"""The CUDA table's target sets and gcc bounds against NVIDIA's own wheels (pinned by sha256):
``knowledge scan --check`` on nvcc 12.8.93, 13.0.88 and crt 13.0.88 finds no contradiction; and
``knowledge refresh --dry-run`` against the index pip is configured with finds nothing older than
the last refresh that the tables lack."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from srcbuild import tables
from srcbuild.cli import main
from tests.real.artifacts import CRT_130, NVCC_130, NVCC_CU12_128, fetch

pytestmark = [pytest.mark.real, pytest.mark.integration]


def run(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--json"])
    return code, json.loads(out.getvalue())


def test_the_cuda_sets_are_the_ptxas_sets() -> None:
    code, report = run("knowledge", "scan", "--check", *(str(fetch(a)) for a in (NVCC_CU12_128, NVCC_130, CRT_130)))
    assert (code, report["contradictions"]) == (0, 0), report
    wheels = {w["file"]: w for w in report["wheels"]}
    twelve_eight = wheels[NVCC_CU12_128.filename]
    assert "101" in twelve_eight["ptxas_sass"] and "103" not in twelve_eight["ptxas_sass"]
    thirteen = wheels[NVCC_130.filename]
    assert "110" in thirteen["ptxas_sass"] and "101" not in thirteen["ptxas_sass"]
    assert wheels[CRT_130.filename]["gcc_max"] == 15
    agreed = {(c["row"], c["fact"]) for w in report["wheels"] for c in w["checks"] if c["status"] == "agrees"}
    assert {("cuda 12.8", "sass"), ("cuda 12.8", "ptx"), ("cuda 13.0", "sass"), ("cuda 13.0", "max_gcc")} <= agreed


def test_refresh_finds_nothing_older_than_the_last_refresh() -> None:
    code, found = run("knowledge", "refresh", "--dry-run")
    assert code == 0
    checked = tables.read_table("index")["checked"]
    assert set(found["newest"]) >= {"torch", "nvidia-cuda-nvcc", "nvidia-cudnn-cu12", "nvidia-nccl-cu12"}
    stale = [n for n in found["new"] if n["uploaded"] is None or n["uploaded"] <= checked]
    assert stale == [], "released before the last refresh yet missing from the tables"


def test_the_metadata_behind_the_oracles_cudnn_exception_is_read_in_place() -> None:
    """The Spack oracle's torch 2.4.1 + cuDNN 9.1 exception rests on this wheel's METADATA, read by
    ranged reads of the index's file (sha256 as the index lists it), not by downloading 800 MB."""
    import os
    import sys

    from srcbuild.ext.source import pip_indexes
    from srcbuild.factscan.index import project_files, read_metadata

    wanted = "torch-2.4.1-cp311-cp311-manylinux1_x86_64.whl"
    (wheel,) = [f for f in project_files("torch", pip_indexes(sys.executable, os.environ)) if f.filename == wanted]
    assert wheel.sha256 == "0b5f88afdfa05a335d80351e3cea57d38e578c8689f751d35e0ff36bce872113"
    text = read_metadata(wheel)
    assert "Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70)" in text or "nvidia-cudnn-cu12==9.1.0.70" in text
