"""``srcbuild knowledge scan --check`` on a small real sample from the package index: torch 2.0.1
(the index's cu117 build), cuDNN 8.5.0.96 and 9.1.0.70 for CUDA 11, and nvcc 11.8.89. The shipped
tables must agree with every fact these binaries state; a table changed to contradict one fails with
exit 6 naming the fact."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from srcbuild import tables
from srcbuild.cli import main
from tests.real.artifacts import CUDNN_CU11_85, CUDNN_CU11_91, NVCC_CU11_118, TORCH_201_CU117, fetch

pytestmark = [pytest.mark.real, pytest.mark.integration]

SAMPLE = (TORCH_201_CU117, CUDNN_CU11_85, CUDNN_CU11_91, NVCC_CU11_118)


def scan(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["knowledge", "scan", *argv])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def scanned() -> tuple[int, dict[str, Any]]:
    paths = [str(fetch(artifact)) for artifact in SAMPLE]
    code, out = scan("--check", "--json", *paths)
    return code, json.loads(out)


def by_file(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {wheel["file"]: wheel for wheel in report["wheels"]}


def test_the_shipped_tables_agree_with_every_fact_of_the_sample(scanned: tuple[int, dict[str, Any]]) -> None:
    code, report = scanned
    contradicting = [c for w in report["wheels"] for c in w["checks"] if c["status"] == "contradicts"]
    assert (code, report["ok"], report["contradictions"]) == (0, True, 0), contradicting
    checked = [c for w in report["wheels"] for c in w["checks"] if c["status"] == "agrees"]
    assert len(checked) >= 7  # torch: wheel archs and Python; each cuDNN; nvcc: min/max cc, max gcc


def test_what_the_binaries_state(scanned: tuple[int, dict[str, Any]]) -> None:
    wheels = by_file(scanned[1])
    torch = wheels[TORCH_201_CU117.filename]
    assert (torch["version"], torch["cuda"], torch["python_tags"], torch["lowest_sass"]) == (
        "2.0.1", "11.7", ["cp311"], "3.7"
    )
    (main_library,) = [lib for lib in torch["libraries"] if lib["name"] == "torch/lib/libtorch_cuda.so"]
    assert main_library["sass"] == ["3.7", "5.0", "6.0", "7.0", "7.5", "8.0", "8.6"]
    assert wheels[CUDNN_CU11_91.filename]["lowest_sass"] == "5.0"
    assert wheels[CUDNN_CU11_85.filename]["lowest_sass"] == "3.5"
    nvcc = wheels[NVCC_CU11_118.filename]
    assert (nvcc["ptxas_targets"][0], nvcc["ptxas_targets"][-1], nvcc["gcc_max"]) == ("3.5", "9.0", 11)
    row = nvcc["rows"][-7:]
    sass = "35 37 50 52 53 60 61 62 70 72 75 80 86 87 89 90"
    assert row[:4] == ["[[cuda]]", 'version = "11.8"', f'sass = "{sass}"', f'ptx = "{sass}"']
    assert nvcc["ptxas_sass"] == sass.split()
    assert nvcc["rows"][-1] == f'source = "binary: {NVCC_CU11_118.filename} sha256:{NVCC_CU11_118.sha256}"'


def test_a_table_the_binary_contradicts_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    shutil.copytree(tables.DATA_DIR, data)
    cuda = data / "cuda.toml"
    text = cuda.read_text()
    row = text.index('version = "11.8"')
    cuda.write_text(text[:row] + text[row:].replace("max_gcc = 11", "max_gcc = 12", 1))
    monkeypatch.setattr(tables, "DATA_DIR", data)
    from srcbuild.knowledge import base

    base.load_knowledge.cache_clear()
    try:
        code, _out = scan("--check", str(fetch(NVCC_CU11_118)))
    finally:
        base.load_knowledge.cache_clear()
    assert code == 6


def test_fetch_downloads_through_pip_and_reads_the_wheel(tmp_path: Path) -> None:
    """--fetch PROJECT==VERSION: pip download into --dest, then the same reading (nvcc 11.8.89, 20 MB)."""
    code, out = scan(
        "--fetch", f"{NVCC_CU11_118.project}=={NVCC_CU11_118.version}", "--dest", str(tmp_path), "--check", "--json"
    )
    assert code == 0, out
    (wheel,) = json.loads(out)["wheels"]
    assert (wheel["file"], wheel["sha256"]) == (NVCC_CU11_118.filename, NVCC_CU11_118.sha256)
    assert (tmp_path / NVCC_CU11_118.filename).is_file()
