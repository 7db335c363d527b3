"""recommend for recorded machines (tests/fixtures/machines): the right GPU, window and recipe."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from srcbuild.advice.recommend import FITS, NEEDS_DRIVER, NO, GpuAdvice, Recommendation, recommend
from srcbuild.cli import main
from srcbuild.console import wrap_text
from srcbuild.host.facts import DriverInfo, GpuInfo
from srcbuild.host.identify import identify, identify_name
from srcbuild.host.parsers import parse_lspci_lines, parse_proc_driver_version, parse_smi_csv, parse_smi_table
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog

MACHINES = Path(__file__).resolve().parents[2] / "fixtures" / "machines"


def gpus_from_nvidia_smi(text: str) -> tuple[list[GpuInfo], DriverInfo | None]:
    """The GPUs and driver of recorded nvidia-smi output (its CSV query, or its table), as the probe
    identifies them."""
    listing = parse_smi_csv(text) or parse_smi_table(text)
    assert listing is not None
    driver = DriverInfo(listing.driver, "nvidia-smi") if listing.driver else None
    return [identify(load_knowledge(), g, "nvidia-smi", driver) for g in listing.gpus], driver


def gpus_from_lspci(text: str) -> list[GpuInfo]:
    """The GPUs of recorded ``lspci -nn`` output, as the probe identifies them."""
    listing = parse_lspci_lines(text)
    assert listing is not None
    return [identify(load_knowledge(), g, "lspci", None) for g in listing.gpus]


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
    recipes = RecipeCatalog(Paths.resolve(environ=os.environ)).load_all()
    return recommend(load_knowledge(), gpus, driver, recipes, name)


def only(result: Recommendation) -> GpuAdvice:
    assert len(result.gpus) == 1
    return result.gpus[0]


def status(advice: GpuAdvice) -> dict[str, str]:
    return {fit.recipe: fit.status for fit in advice.recipes}


# (machine, compute capability, chip, official wheel to install first, recipe for a newer torch or None)
EXPECTED = [
    ("gt750m-laptop", "3.0", "GK107", ("1.3.0", "cu101"), "kepler-cu102"),
    ("gt750m-mac", "3.0", "GK107", ("1.3.0", "cu101"), "kepler-cu92"),  # driver 418 is too old for CUDA 10.2
    # R470 runs cu118 by minor-version compatibility; a build gives the newest torch CUDA 11.8 builds
    ("k80-server", "3.7", "GK210", ("2.7.1", "cu118"), "kepler-k80-torch28"),
    # the last cu126 wheel is 2.14.1; the recipe builds 2.15.0
    ("gtx860m-maxwell", "5.0", None, ("2.14.1", "cu126"), "maxwell-cu126"),
    ("gtx860m-kepler", "3.0", "GK104", ("1.3.0", "cu101"), "kepler-cu102"),
    ("gtx750ti", "5.0", None, ("2.14.1", "cu126"), "maxwell-cu126"),
    ("mx150-laptop", "6.1", None, ("2.7.1", "cu118"), None),  # driver 470 cannot run CUDA 12.6
    ("gtx1080", "6.1", "GP104", ("2.14.1", "cu126"), "pascal-cu126"),
]


@pytest.mark.parametrize(("name", "cc", "chip", "wheel", "best"), EXPECTED)
def test_recorded_machine_gets_the_official_wheel_first(
    name: str, cc: str, chip: str | None, wheel: tuple[str, str], best: str | None
) -> None:
    advice = only(machine(name))
    assert str(advice.gpu.cc) == cc
    if chip:
        assert advice.gpu.chip == chip
    assert advice.lead == "wheel"
    assert advice.official is not None and (advice.official.torch, advice.official.cuda_tag) == wheel
    assert (advice.best.recipe if advice.best else None) == best


def test_mpi_asks_for_a_build() -> None:
    advice = only(machine("gtx1080"))
    with_mpi = recommend(
        load_knowledge(),
        [advice.gpu],
        None,
        RecipeCatalog(Paths.resolve(environ=os.environ)).load_all(),
        "gtx1080",
        want_mpi=True,
    ).gpus[0]
    assert with_mpi.lead == "recipe" and with_mpi.best is not None and with_mpi.best.recipe == "pascal-cu126-mpi"


def test_an_h100_as_the_probe_reads_it() -> None:
    """nvidia-smi's CSV recorded on an H100 server: the PCI id names the chip, the driver is R580."""
    gpus, driver = gpus_from_nvidia_smi((MACHINES / "h100-server" / "nvidia-smi.csv").read_text())
    assert [(g.name, str(g.cc), g.pci_id, g.chip, g.source) for g in gpus] == [
        ("NVIDIA H100 80GB HBM3", "9.0", "10de:2330", "GH100", "nvidia-smi")
    ]
    assert driver is not None and driver.version == "580.159.04"


def test_gtx860m_name_is_ambiguous_and_the_pci_id_decides() -> None:
    gpu = identify_name(load_knowledge(), "GeForce GTX 860M", "--gpu")
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
    assert advice.window.cuda_range == "6.5 to 11.8"  # 6.5: Spack cuda.py (tables start at 8.0)
    assert advice.window.last_branch == 470
    best = advice.recipes[0]
    # the official 2.7.1 cu118 wheel comes first; the recipe builds 2.8.0, the newest torch CUDA 11.8 builds
    assert advice.best == best
    assert best.recipe == "kepler-k80-torch28" and best.status == FITS
    assert best.notes == (
        "SASS for 3.7",
        "driver 470.82.01 runs CUDA 11.8 through CUDA minor-version compatibility (driver >= 450.80.02; no PTX JIT)",
    )
    official = advice.window.official
    assert official is not None and (official.torch, official.cuda_tag) == ("2.7.1", "cu118")
    assert official.caveats == (
        "its bundled cuDNN 9 does not support Kepler: run with torch.backends.cudnn.enabled = False",
    )
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
    assert (window.official.torch, window.official.cuda_tag, window.official.lowest_cc) == ("2.14.1", "cu126", "5.0")


def test_pascal_recipes_need_a_newer_driver_on_r470() -> None:
    advice = only(machine("mx150-laptop"))
    assert status(advice)["pascal-cu126"] == NEEDS_DRIVER
    assert status(advice)["kepler-k80-cu118"] == NO
    ranked = [f.recipe for f in advice.recipes]
    assert ranked.index("pascal-mx150-cu113") < ranked.index("kepler-cu102")  # SASS before PTX-only


GT750M_LAPTOP = """\
srcbuild recommend: --lspci {path}
knowledge last checked: 2026-11-28 (newest torch it knows: 2.15.0); newest on the index then: \
torch 2.15.0, torchvision 0.29.2, torchaudio 2.11.1, CUDA 13.5.37, cuDNN 9.28.1.4, NCCL 2.32.3

GPU: GeForce GT 750M (GK107, pci 10de:0fe4), from lspci -nn in {path}
  compute capability 3.0 (Kepler)
  no build needed: pip install torch==1.3.0+cu101 torchvision==0.4.1+cu101 \
-f https://download.pytorch.org/whl/torch_stable.html
    (official cu101 wheel of torch 1.3.0, SASS for 3.0 and up, Python 3.5 to 3.7)
    no Python 3.5 to 3.7 on this machine; make one: srcbuild env runtime --python 3.7 --into ~/venvs/torch-1.3.0
    then install with it: ~/venvs/torch-1.3.0/bin/python -m pip install torch==1.3.0+cu101 \
torchvision==0.4.1+cu101 -f https://download.pytorch.org/whl/torch_stable.html
  for torch 1.10.2 (newer than the official wheel) build: kepler-cu102 \
(torch 1.10.2, torchvision 0.11.3, CUDA 10.2, gcc 8, Python 3.9)
  CUDA that can target it: 5.0 to 10.2 (gcc <= 5 for 8.0 ... <= 8 for 10.2)
  last driver branch for it: R470, which runs CUDA up to 11.4
  newest torch its CUDA window allows: 1.13.1 (with CUDA 10.2)
  newest torch reported to work on it: 1.10.2 (dizcza/pytorch-sm30-docker:README.md ('latest possible \
pytorch (v1.10.2) and torchvision (v0.11.3) that could be compiled for the sm_30'); dizcza/pytorch-sm30-docker#4)
  caveat: torch.compile (TorchInductor) needs Triton, which supports compute capability 7.0 and \
newer: run eager: leave out torch.compile, or set TORCHDYNAMO_DISABLE=1
  recipes, best first:
    kepler-cu102: fits (torch 1.10.2, torchvision 0.11.3, CUDA 10.2, gcc 8, Python 3.9)
    kepler-cu92: fits (torch 1.7.1, torchvision 0.8.2, CUDA 9.2, gcc 7, Python 3.8)
    kepler-cu92-mpi: fits (torch 1.7.1, torchvision 0.8.2, CUDA 9.2, gcc 7, Python 3.8, MPI)
  8 other recipes do not fit it (srcbuild compat --arch 3.0 says why)
"""


def test_gt750m_laptop_from_lspci_alone_exact_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only `lspci -nn` of a GT 750M laptop -> cc, the official wheel first (and, on a machine
    without a Python it supports, the commands that make one), the recipe for a newer torch."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no Python 3.5 to 3.7 on it
    path = MACHINES / "gt750m-laptop" / "lspci.txt"
    assert main(["recommend", "--lspci", str(path)]) == 0
    assert capsys.readouterr().out == wrap_text(GT750M_LAPTOP.format(path=path), 80)  # 80 columns: not a terminal


def test_recommend_by_pci_id_and_driver_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["recommend", "--pci-id", "10de:102d", "--driver", "470.82", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["driver"] == {"version": "470.82", "source": "--driver"}
    (gpu,) = data["gpus"]
    assert gpu["gpu"]["name"] == "Tesla K80"
    assert gpu["gpu"]["compute_capability"] == "3.7"
    assert gpu["lead"] == "wheel" and gpu["recommended"] == "kepler-k80-torch28"
    assert (
        gpu["pip"] == "pip install torch==2.7.1 torchvision==0.22.1 --index-url https://download.pytorch.org/whl/cu118"
    )
    assert gpu["window"]["cuda"][-1] == "11.8"
    assert set(gpu["recipes"][0]) == {
        "recipe",
        "status",
        "torch",
        "torchvision",
        "cuda",
        "gcc",
        "python",
        "mpi",
        "native",
        "reasons",
        "notes",
    }


def test_ambiguous_gpu_name_asks_for_the_pci_id(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    python = tmp_path / "python{}.{}".format(*sys.version_info[:2])
    python.symlink_to(os.path.realpath(sys.executable))  # this Python: in the GM107 wheel's range only
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["recommend", "--gpu", "GeForce GTX 860M"]) == 0  # no environment is active (conftest)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[lines.index("") + 1 :] == wrap_lines(
        [
            "GPU: GeForce GTX 860M, from --gpu",
            "  the name 'GeForce GTX 860M' is used by GPUs of different compute capabilities:",
            "    if it is the GK104 one: compute capability 3.0 (Kepler)",
            "      no build needed: pip install torch==1.3.0+cu101 torchvision==0.4.1+cu101 "
            "-f https://download.pytorch.org/whl/torch_stable.html",
            "        (official cu101 wheel of torch 1.3.0, SASS for 3.0 and up, Python 3.5 to 3.7)",
            "        no Python 3.5 to 3.7 on this machine; make one: "
            "srcbuild env runtime --python 3.7 --into ~/venvs/torch-1.3.0",
            "        then install with it: ~/venvs/torch-1.3.0/bin/python -m pip install torch==1.3.0+cu101 "
            "torchvision==0.4.1+cu101 -f https://download.pytorch.org/whl/torch_stable.html",
            "      for torch 1.10.2 (newer than the official wheel) build: kepler-cu102 "
            "(torch 1.10.2, torchvision 0.11.3, CUDA 10.2, gcc 8, Python 3.9)",
            "    if it is the GM107 one: compute capability 5.0 (Maxwell)",
            "      no build needed: pip install torch==2.14.1 torchvision==0.29.1 "
            "--index-url https://download.pytorch.org/whl/cu126",
            "        (official cu126 wheel of torch 2.14.1, SASS for 5.0 and up, Python 3.10 to 3.14)",
            "        pip installs into an environment, and none is active; make one: "
            "srcbuild env runtime --python {}.{} --into ~/venvs/torch-2.14.1".format(*sys.version_info[:2]),
            "        then install with it: ~/venvs/torch-2.14.1/bin/python -m pip install torch==2.14.1 "
            "torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cu126",
            "      for torch 2.15.0 (newer than the official wheel) build: maxwell-cu126 "
            "(torch 2.15.0, torchvision 0.29.2, CUDA 12.6, gcc 13, Python 3.12)",
            "  to tell which, run: lspci -nn | grep -i nvidia  (and pass it with --paste -)",
        ]
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
    ("name", "cc", "chip", "wheel"),
    [
        ("gt750m-laptop", "3.0", "GK107", ("1.3.0", "cu101")),
        ("gt750m-mac", "3.0", "GK107", ("1.3.0", "cu101")),
        ("k80-server", "3.7", "GK210", ("2.7.1", "cu118")),
        ("gtx860m-maxwell", "5.0", "GM107", ("2.14.1", "cu126")),
        ("gtx860m-kepler", "3.0", "GK104", ("1.3.0", "cu101")),
        ("gtx750ti", "5.0", "GM107", ("2.14.1", "cu126")),
        ("mx150-laptop", "6.1", "GP108", ("2.7.1", "cu118")),
        ("gtx1080", "6.1", "GP104", ("2.14.1", "cu126")),
    ],
)
def test_recorded_lspci_alone_with_proc_driver(name: str, cc: str, chip: str, wheel: tuple[str, str]) -> None:
    """The same machines seen only through `lspci -nn` (and /proc's driver version when recorded)."""
    folder = MACHINES / name
    gpus = gpus_from_lspci((folder / "lspci.txt").read_text())
    proc = folder / "proc-driver-version.txt"
    version = parse_proc_driver_version(proc.read_text()) if proc.exists() else None
    driver = DriverInfo(version, "/proc/driver/nvidia/version") if version else None
    result = recommend(
        load_knowledge(), gpus, driver, RecipeCatalog(Paths.resolve(environ=os.environ)).load_all(), name
    )
    advice = result.gpus[0]
    assert (str(advice.gpu.cc), advice.gpu.chip) == (cc, chip)
    assert advice.official is not None and (advice.official.torch, advice.official.cuda_tag) == wheel


def wrap_lines(lines: list[str]) -> list[str]:
    """``lines`` as an 80-column output shows them (tests/unit/test_output_width.py checks the width)."""
    return wrap_text("\n".join(lines), 80).splitlines()
