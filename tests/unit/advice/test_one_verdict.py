"""compat, recommend and doctor give the same verdict per recipe (one computation), and a new GPU
generation is a data-only change."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from srcbuild import capability, tables
from srcbuild.advice.doctor import diagnose
from srcbuild.capability import ComputeCapability
from srcbuild.cli import main
from srcbuild.host.facts import GpuInfo, HostFacts
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog


def compat_verdicts(capsys: pytest.CaptureFixture[str], cc: str) -> dict[str, bool]:
    assert main(["compat", "--arch", cc, "--json"]) == 0
    return {r["name"]: r["fits"] for r in json.loads(capsys.readouterr().out)["recipes"]}


def recommend_verdicts(capsys: pytest.CaptureFixture[str], pci_id: str) -> dict[str, bool]:
    assert main(["recommend", "--pci-id", pci_id, "--json"]) == 0
    (gpu,) = json.loads(capsys.readouterr().out)["gpus"]
    return {r["recipe"]: r["status"] == "fits" for r in gpu["recipes"]}


def doctor_verdicts(cc: str) -> dict[str, bool]:
    paths = Paths.resolve(environ=os.environ)
    host = HostFacts(gpus=(GpuInfo("GPU", ComputeCapability.parse(cc), "test"),), driver=None)
    report = diagnose(load_knowledge(), host, RecipeCatalog(paths).load_all(), paths)
    return {v.recipe: v.gpu_fit == ("fits",) for v in report.verdicts if v.gpu_fit}  # CPU-only: no GPU verdict


@pytest.mark.parametrize(
    ("cc", "pci_id", "fitting"),
    [
        ("3.0", "10de:0fe4", {"kepler-cu92", "kepler-cu92-mpi", "kepler-cu102"}),  # GT 750M
        ("5.0", "10de:1380", {"maxwell-cu126"}),  # GTX 750 Ti
        ("6.1", "10de:1d10", {"pascal-cu126", "pascal-cu126-mpi", "pascal-mx150-cu113"}),  # MX150
        ("9.0", "10de:2330", set()),  # H100: the PTX-only fits of old recipes never beat its official wheel
    ],
)
def test_compat_recommend_and_doctor_agree(
    cc: str, pci_id: str, fitting: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    compat = compat_verdicts(capsys, cc)
    recommend = recommend_verdicts(capsys, pci_id)
    doctor = doctor_verdicts(cc)
    assert compat == recommend == doctor
    assert {name for name, fits in compat.items() if fits} == fitting


NEW_GENERATION = """
[[capability]]
cc = "14.0"
generation = "Nextgen"
chips = ["GN100"]
source = "a test's made-up generation"
"""

NEW_CUDA = """
[[cuda]]
version = "14.0"
sass = "75 80 140 140a"
ptx = "75 80 140 140a"
targets = "a test's made-up ptxas"
min_gcc = 6
max_gcc = 16
min_driver = "600.10"
source = "a test's made-up CUDA"
"""


def test_a_new_generation_is_a_data_only_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    shutil.copytree(tables.DATA_DIR, data)
    for name, rows in (("capabilities", NEW_GENERATION), ("cuda", NEW_CUDA)):
        text = (data / f"{name}.toml").read_text()
        head, sep, tail = text.partition("\n[sources]")
        (data / f"{name}.toml").write_text(head + rows + sep + tail)
    load_knowledge.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(tables, "DATA_DIR", data)
            assert main(["compat", "--arch", "14.0", "--json"]) == 0
            window = json.loads(capsys.readouterr().out)
            assert (window["cc"], window["generation"]) == ("14.0", "Nextgen")
            assert [o["cuda"] for o in window["cuda"]] == ["14.0"]
            assert window["last_driver_branch"] is None  # current drivers still support it
            assert capability.chip_capability("GN100M") is not None
    finally:
        load_knowledge.cache_clear()
    assert main(["compat", "--arch", "14.0"]) == 2  # unknown again with the shipped data
