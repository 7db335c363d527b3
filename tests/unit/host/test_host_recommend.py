"""recommend for recorded machines (tests/fixtures/machines): the right GPU, window and recipe."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.advice.recommend import FITS, NEEDS_DRIVER, NO, GpuAdvice, Recommendation, recommend
from srcbuild.cli import main
from srcbuild.host.facts import DriverInfo
from srcbuild.host.gpu import gpus_from_lspci, gpus_from_nvidia_smi, parse_proc_driver_version, resolve_name
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog

MACHINES = Path(__file__).resolve().parents[2] / "fixtures" / "machines"


def machine(name: str) -> Recommendation:
    """recommend() for a recorded machine: nvidia-smi output if recorded, else lspci, plus /proc's driver."""
    folder = MACHINES / name
    driver = None
    smi = next((p for p in (folder / "nvidia-smi.csv", folder / "nvidia-smi.txt") if p.exists()), None)
    if smi is not None:
        gpus, driver = gpus_from_nvidia_smi(smi.read_text())
    else:
        gpus = gpus_from_lspci((folder / "lspci.txt").read_text())
    proc = folder / "proc-driver-version.txt"
    if driver is None and proc.exists():
        version = parse_proc_driver_version(proc.read_text())
        driver = DriverInfo(version, "/proc/driver/nvidia/version") if version else None
    recipes = RecipeCatalog(Paths.resolve()).load_all()
    return recommend(load_knowledge(), gpus, driver, recipes, name)


def only(result: Recommendation) -> GpuAdvice:
    assert len(result.gpus) == 1
    return result.gpus[0]


def status(advice: GpuAdvice) -> dict[str, str]:
    return {fit.recipe: fit.status for fit in advice.recipes}


@pytest.mark.parametrize(
    ("name", "cc", "chip", "best"),
    [
        ("gt750m-laptop", "3.0", "GK107", "kepler-cu102"),
        ("gt750m-mac", "3.0", "GK107", "kepler-cu92"),  # driver 418 is too old for CUDA 10.2
        ("k80-server", "3.7", "GK210", "kepler-k80-cu118"),
        ("gtx860m-maxwell", "5.0", None, "maxwell-cu126"),
        ("gtx860m-kepler", "3.0", "GK104", "kepler-cu102"),
        ("gtx750ti", "5.0", None, "maxwell-cu126"),
        ("mx150-laptop", "6.1", None, "pascal-mx150-cu113"),  # driver 470 cannot run CUDA 12.6
        ("gtx1080", "6.1", "GP104", "pascal-cu126"),
    ],
)
def test_recorded_machine_gets_the_expected_recipe(name: str, cc: str, chip: str | None, best: str) -> None:
    advice = only(machine(name))
    assert str(advice.gpu.cc) == cc
    if chip:
        assert advice.gpu.chip == chip
    assert advice.best is not None and advice.best.recipe == best


def test_gtx860m_name_is_ambiguous_and_the_pci_id_decides() -> None:
    gpu = resolve_name("GeForce GTX 860M", "--gpu")
    assert gpu.cc is None
    assert gpu.candidates == (
        "GK104 (compute capability 3.0, pci 10de:119a)",
        "GM107 (compute capability 5.0, pci 10de:1392)",
    )
    maxwell = gpus_from_lspci((MACHINES / "gtx860m-maxwell" / "lspci.txt").read_text())
    kepler = gpus_from_lspci((MACHINES / "gtx860m-kepler" / "lspci.txt").read_text())
    assert [(g.name, g.chip, str(g.cc)) for g in maxwell + kepler] == [
        ("GeForce GTX 860M", "GM107", "5.0"),
        ("GeForce GTX 860M", "GK104", "3.0"),
    ]


def test_k80_two_boards_one_advice_and_minor_version_compatibility() -> None:
    advice = only(machine("k80-server"))
    assert advice.count == 2
    assert advice.window is not None
    assert advice.window.cuda_range == "8.0 to 11.8"
    assert advice.window.last_branch == 470
    best = advice.best
    assert best is not None
    assert best.notes == (
        "SASS for 3.7",
        "driver 470.82.01 runs CUDA 11.8 through CUDA minor-version compatibility (driver >= 450.80.02; no PTX JIT)",
    )
    official = advice.window.official
    assert official is not None and (official.torch, official.cuda_tag) == ("2.5.1", "cu118")
    assert status(advice)["maxwell-cu126"] == NO


def test_old_driver_means_needs_driver_not_no() -> None:
    advice = only(machine("gt750m-mac"))
    kepler_cu102 = next(f for f in advice.recipes if f.recipe == "kepler-cu102")
    assert kepler_cu102.status == NEEDS_DRIVER
    assert kepler_cu102.reasons == ("CUDA 10.2 needs driver >= 440.33; this machine has 418.226.00",)
    assert status(advice)["kepler-cu92"] == FITS


def test_no_build_needed_when_an_official_wheel_has_the_kernels() -> None:
    window = only(machine("gtx750ti")).window
    assert window is not None and window.official is not None
    assert (window.official.torch, window.official.cuda_tag, window.official.lowest_cc) == ("2.13.0", "cu126", "5.0")


def test_pascal_recipes_need_a_newer_driver_on_r470() -> None:
    advice = only(machine("mx150-laptop"))
    assert status(advice)["pascal-cu126"] == NEEDS_DRIVER
    assert status(advice)["kepler-k80-cu118"] == NO
    ranked = [f.recipe for f in advice.recipes]
    assert ranked.index("pascal-mx150-cu113") < ranked.index("kepler-cu102")  # SASS before PTX-only


GT750M_LAPTOP = """\
srcbuild recommend: --lspci {path}

GPU: GeForce GT 750M (GK107, pci 10de:0fe4), from lspci output in {path}
  compute capability 3.0 (Kepler)
  CUDA that can target it: 8.0 to 10.2 (host gcc per CUDA: 8.0: gcc <= 5, 9.0: gcc <= 6, 9.1: gcc <= 6, \
9.2: gcc <= 7, 10.0: gcc <= 7, 10.1: gcc <= 8, 10.2: gcc <= 8)
  last driver branch for it: R470, which runs CUDA up to 11.4
  newest torch its CUDA window allows: 1.13.1 (with CUDA 10.2)
  newest torch reported to work on it: 1.10.2 (source: dizcza/pytorch-sm30-docker:README.md ('latest possible \
pytorch (v1.10.2) and torchvision (v0.11.3) that could be compiled for the sm_30'); dizcza/pytorch-sm30-docker#4)
  no build needed for torch 1.3.0: its official cu101 wheel has kernels for compute capability 3.0 and up
  recipe to use: kepler-cu102 (torch 1.10.2, torchvision 0.11.3, CUDA 10.2, gcc 8, Python 3.9)
  recipes, best first:
    kepler-cu102: fits (torch 1.10.2, torchvision 0.11.3, CUDA 10.2, gcc 8, Python 3.9)
    kepler-cu92: fits (torch 1.7.1, torchvision 0.8.2, CUDA 9.2, gcc 7, Python 3.8)
    kepler-cu92-mpi: fits (torch 1.7.1, torchvision 0.8.2, CUDA 9.2, gcc 7, Python 3.8)
    maxwell-cu126: does not fit (torch 2.11.0, torchvision 0.26.0, CUDA 12.6, gcc 13, Python 3.12)
      - It builds for 5.0, 5.2, not for 3.0
    pascal-cu126: does not fit (torch 2.11.0, torchvision 0.26.0, CUDA 12.6, gcc 13, Python 3.12)
      - It builds for 6.0, 6.1, not for 3.0
    pascal-cu126-mpi: does not fit (torch 2.11.0, torchvision 0.26.0, CUDA 12.6, gcc 13, Python 3.12)
      - It builds for 6.0, 6.1, not for 3.0
    kepler-k80-cu118: does not fit (torch 2.5.1, torchvision 0.20.1, CUDA 11.8, gcc 11, Python 3.10)
      - It builds for 3.5, 3.7, not for 3.0
    kepler-k80-cu118-mpi: does not fit (torch 2.5.1, torchvision 0.20.1, CUDA 11.8, gcc 11, Python 3.10)
      - It builds for 3.5, 3.7, not for 3.0
    pascal-mx150-cu113: does not fit (torch 1.12.0, torchvision 0.13.0, CUDA 11.3, gcc 10, Python 3.9)
      - It builds for 6.1, not for 3.0
"""


def test_gt750m_laptop_from_lspci_alone_exact_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Done-when of the issue: only `lspci -nn` of a GT 750M laptop -> cc, CUDA window, newest torch, recipe."""
    path = MACHINES / "gt750m-laptop" / "lspci.txt"
    assert main(["recommend", "--lspci", str(path)]) == 0
    assert capsys.readouterr().out == GT750M_LAPTOP.format(path=path)


def test_recommend_by_pci_id_and_driver_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["recommend", "--pci-id", "10de:102d", "--driver", "470.82", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["driver"] == {"version": "470.82", "source": "--driver"}
    (gpu,) = data["gpus"]
    assert gpu["gpu"]["name"] == "Tesla K80"
    assert gpu["gpu"]["compute_capability"] == "3.7"
    assert gpu["recommended"] == "kepler-k80-cu118"
    assert gpu["window"]["cuda"][-1] == "11.8"
    assert set(gpu["recipes"][0]) == {
        "recipe",
        "status",
        "torch",
        "torchvision",
        "cuda",
        "gcc",
        "python",
        "native",
        "reasons",
        "notes",
    }


def test_ambiguous_gpu_name_asks_for_the_pci_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", "--gpu", "GeForce GTX 860M"]) == 2  # as `compat --gpu` does
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == (
        "error: --gpu 'GeForce GTX 860M' is ambiguous: it names GPUs of compute capability 3.0, 5.0"
    )
    assert out == (
        "srcbuild recommend: --gpu 'GeForce GTX 860M'\n"
        "\n"
        "GPU: GeForce GTX 860M, from --gpu\n"
        "  the name 'GeForce GTX 860M' is used by GPUs of different compute capabilities:\n"
        "    GK104 (compute capability 3.0, pci 10de:119a)\n"
        "    GM107 (compute capability 5.0, pci 10de:1392)\n"
        "  give the PCI id (from `lspci -nn`) with --pci-id to choose\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pci-id", "xyz"], "error: --pci-id xyz: not an NVIDIA PCI id\n"),
        (["--driver", "latest", "--gpu", "Tesla K80"], "error: --driver latest: not an NVIDIA driver version\n"),
        (
            ["--lspci", "/nonexistent/lspci.txt"],
            "error: --lspci /nonexistent/lspci.txt: cannot read it (No such file or directory)\n",
        ),
    ],
)
def test_bad_inputs_are_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", *argv]) == 2
    assert capsys.readouterr().err.startswith(message)


@pytest.mark.parametrize(
    ("name", "cc", "chip", "best"),
    [
        ("gt750m-laptop", "3.0", "GK107", "kepler-cu102"),
        ("gt750m-mac", "3.0", "GK107", "kepler-cu92"),
        ("k80-server", "3.7", "GK210", "kepler-k80-cu118"),
        ("gtx860m-maxwell", "5.0", "GM107", "maxwell-cu126"),
        ("gtx860m-kepler", "3.0", "GK104", "kepler-cu102"),
        ("gtx750ti", "5.0", "GM107", "maxwell-cu126"),
        ("mx150-laptop", "6.1", "GP108", "pascal-mx150-cu113"),
        ("gtx1080", "6.1", "GP104", "pascal-cu126"),
    ],
)
def test_recorded_lspci_alone_with_proc_driver(name: str, cc: str, chip: str, best: str) -> None:
    """The same machines seen only through `lspci -nn` (and /proc's driver version when recorded)."""
    folder = MACHINES / name
    gpus = gpus_from_lspci((folder / "lspci.txt").read_text())
    proc = folder / "proc-driver-version.txt"
    version = parse_proc_driver_version(proc.read_text()) if proc.exists() else None
    driver = DriverInfo(version, "/proc/driver/nvidia/version") if version else None
    result = recommend(load_knowledge(), gpus, driver, RecipeCatalog(Paths.resolve()).load_all(), name)
    advice = result.gpus[0]
    assert (str(advice.gpu.cc), advice.gpu.chip) == (cc, chip)
    assert advice.best is not None and advice.best.recipe == best
