"""What people paste (tests/fixtures/paste, one file per format and driver era): the GPU, its compute
capability and the first answer, exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.errors import UsageError
from srcbuild.host.identify import read_gpus
from srcbuild.knowledge import load_knowledge

PASTES = Path(__file__).resolve().parents[2] / "fixtures" / "paste"

# file -> (format recognised, driver, [(name, compute capability, pci id, chip)])
EXPECTED = {
    "lspci-gt750m-mac.txt": ("lspci", None, [("GeForce GT 750M Mac Edition", "3.0", "10de:0fe9", "GK107")]),
    "lspci-gtx860m-maxwell.txt": ("lspci", None, [("GeForce GTX 860M", "5.0", "10de:1392", "GM107")]),
    "lspci-mx150.txt": ("lspci", None, [("GeForce MX150", "6.1", None, "GP108")]),
    "lspci-k80.txt": ("lspci", None, [("Tesla K80", "3.7", "10de:102d", "GK210")] * 2),
    "lspci-gtx1050ti-maxq.txt": ("lspci", None, [("GeForce GTX 1050 Ti Max-Q", "6.1", "10de:1c8f", "GP107")]),
    "lspci-nn-gtx860m-kepler.txt": ("lspci -nn", None, [("GeForce GTX 860M", "3.0", "10de:119a", "GK104")]),
    "lspci-v-gtx1060-rev2.txt": ("lspci", None, [("GeForce GTX 1060 6GB Rev. 2", "6.1", "10de:1c06", "GP106")]),
    "lspci-vvnn-gt730.txt": ("lspci -nn", None, [("GeForce GT 730", "3.5", "10de:1287", "GK208B")]),
    "lspci-mm-gtx660-oem.txt": ("lspci -mm", None, [("GeForce GTX 660 OEM", "3.0", "10de:1185", "GK104")]),
    "smi-r340-gtx285.txt": ("nvidia-smi table (R340)", "340.108", [("GeForce GTX 285", "1.3", "10de:05e3", "GT200b")]),
    "smi-r390-gtx960m.txt": ("nvidia-smi table (R390)", "390.141", [("GeForce GTX 960M", "5.0", "10de:139b", "GM107")]),
    "smi-r470-k80.txt": ("nvidia-smi table (R470)", "470.82.01", [("Tesla K80", "3.7", "10de:102d", "GK210")] * 2),
    "smi-r470-truncated.txt": ("nvidia-smi table (R470)", "470.199.02", [("NVIDIA GeForce ...", None, None, None)]),
    # R535 cannot drive the Kepler GTX 860M (its last branch is R470): it is the GM107 one
    "smi-r535-gtx860m.txt": (
        "nvidia-smi table (R535)",
        "535.154.05",
        [("NVIDIA GeForce GTX 860M", "5.0", "10de:1392", "GM107")],
    ),
    # R535 cuts "NVIDIA GeForce RTX 4060 Laptop GPU": every RTX 4060 variant is Ada, 8.9
    "smi-r535-truncated-laptop.txt": (
        "nvidia-smi table (R535)",
        "535.171.04",
        [("NVIDIA GeForce RTX 4060 ...", "8.9", None, "AD104/AD106/AD107")],
    ),
    "smi-r580-h100.txt": ("nvidia-smi table (R580)", "580.95.05", [("NVIDIA H100 80GB HBM3", "9.0", None, "GH100")]),
    "smi-L-mx150.txt": ("nvidia-smi -L", None, [("NVIDIA GeForce MX150", "6.1", None, "GP107/GP108")]),
    "smi-L-gtx860m.txt": ("nvidia-smi -L", None, [("GeForce GTX 860M", None, None, None)]),
    "smi-query-h100.csv": (
        "nvidia-smi --query-gpu csv",
        "580.95.05",
        [("NVIDIA H100 80GB HBM3", "9.0", "10de:2330", "GH100")],
    ),
    "proc-information-gt750m.txt": (
        "/proc/driver/nvidia/gpus/*/information",
        None,
        [("GeForce GT 750M", "3.0", None, "GK107")],  # the name alone cannot tell 0fe4 from the Mac's 0fe9
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_pasted_format_names_the_gpu(name: str) -> None:
    fmt, driver, gpus = EXPECTED[name]
    reading = read_gpus(load_knowledge(), (PASTES / name).read_text(), name)
    assert reading.formats[0] == fmt
    assert (reading.driver.version if reading.driver else None) == driver
    assert [(g.name, str(g.cc) if g.cc else None, g.pci_id, g.chip) for g in reading.gpus] == gpus


def test_every_fixture_has_an_expected_answer() -> None:
    on_disk = {p.name for p in PASTES.iterdir()}
    assert on_disk == set(EXPECTED) | {"nothing.txt", "lspci-intel-only.txt"}


def test_ambiguous_name_lists_both_and_asks_for_lspci_nn() -> None:
    reading = read_gpus(load_knowledge(), (PASTES / "smi-L-gtx860m.txt").read_text(), "paste")
    assert reading.gpus[0].candidates == (
        "GK104 (compute capability 3.0, pci 10de:119a)",
        "GM107 (compute capability 5.0, pci 10de:1392)",
    )
    assert reading.notes == (
        "the name fits GPUs of different compute capabilities; to tell which, run: lspci -nn | grep -i nvidia",
    )


def test_truncated_name_says_which_command_gives_the_full_one() -> None:
    reading = read_gpus(load_knowledge(), (PASTES / "smi-r470-truncated.txt").read_text(), "paste")
    assert reading.notes == (
        "nvidia-smi cut the GPU name short ('NVIDIA GeForce ...'); for the full name and id run: "
        "nvidia-smi --query-gpu=name,pci.device_id,compute_cap,driver_version --format=csv",
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nothing.txt", "error: nothing.txt: no lspci, nvidia-smi or /proc/driver/nvidia output recognised in it"),
        ("lspci-intel-only.txt", "error: lspci-intel-only.txt: the lspci it holds lists no NVIDIA GPU"),
    ],
)
def test_nothing_recognised_exits_non_zero_with_the_command_to_run(
    name: str, message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(PASTES)
    assert main(["recommend", "--paste", name]) == UsageError.exit_code
    err = capsys.readouterr().err
    assert err.splitlines()[0] == message
    assert "lspci -nn | grep -i nvidia | srcbuild recommend --paste -" in err


# The first answer an expert gives, for each GPU as its users paste it.
FIRST_ANSWER = {
    "lspci-gt750m-mac.txt": "pip install torch==1.3.0+cu101 torchvision==0.4.1+cu101 "
    "-f https://download.pytorch.org/whl/torch_stable.html",
    "lspci-gtx860m-maxwell.txt": "pip install torch==2.14.1 torchvision==0.29.1 "
    "--index-url https://download.pytorch.org/whl/cu126",
    "lspci-nn-gtx860m-kepler.txt": "pip install torch==1.3.0+cu101 torchvision==0.4.1+cu101 "
    "-f https://download.pytorch.org/whl/torch_stable.html",
    "lspci-mx150.txt": "pip install torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cu126",
    "lspci-k80.txt": "pip install torch==2.7.1 torchvision==0.22.1 --index-url https://download.pytorch.org/whl/cu118",
    "smi-r580-h100.txt": "pip install torch==2.15.0 torchvision==0.29.2 "
    "--index-url https://download.pytorch.org/whl/cu132",
    "smi-query-h100.csv": "pip install torch==2.15.0 torchvision==0.29.2 "
    "--index-url https://download.pytorch.org/whl/cu132",
}


@pytest.mark.parametrize("name", sorted(FIRST_ANSWER))
def test_first_answer_is_the_official_wheel(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", "--paste", str(PASTES / name), "--json"]) == 0
    (gpu, *_) = json.loads(capsys.readouterr().out)["gpus"]
    assert (gpu["lead"], gpu["pip"]) == ("wheel", FIRST_ANSWER[name])


def test_stdin_paste(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO((PASTES / "lspci-k80.txt").read_text()))
    assert main(["recommend", "--paste", "-"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the words, whatever the wrapping
    assert "GPU: 2 x Tesla K80 (GK210, pci 10de:102d), from lspci in standard input" in out
    assert "caveat: its bundled cuDNN 9 does not support Kepler: run with torch.backends.cudnn.enabled = False" in out


def test_lspci_option_does_not_read_nvidia_smi_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", "--lspci", str(PASTES / "smi-r580-h100.txt")]) == UsageError.exit_code
    assert "no lspci output recognised in it" in capsys.readouterr().err
