"""gpus.toml agrees with the PCI id database installed here (Debian's or Ubuntu's pci.ids package:
the suite runs on each distribution tests/setup.sh prepares, .ci/stock-root's roots included), and
with the NVIDIA lines of the pci.ids releases of the distributions tested."""

from __future__ import annotations

from pathlib import Path

from srcbuild.capability import chip_base, chip_capability
from srcbuild.knowledge import load_knowledge
from srcbuild.knowledge.pciids import PciDevice, apply_renamed, nvidia_devices, renamed_rows
from srcbuild.tables import read_table
from tests.conftest import require_tool

PCI_IDS = Path("/usr/share/misc/pci.ids")

# NVIDIA device lines of Ubuntu's pci.ids packages (/usr/share/misc/pci.ids) that Debian 12's
# 0.0~2023.04.11-1 lacks or names otherwise: Ubuntu 24.04's 0.0~2024.03.31-1 ...
UBUNTU_2404 = """\
10de  NVIDIA Corporation
\t1e35  TU102GL [Tesla T10]
\t2080  GA100
\t2081  GA100
\t20b4  GA100
\t20bd  GA100 [A800 SXM4 40GB]
\t20c0  GA100 [Initial DevID]
\t20fe  GA100 [INT SKU]
\t20ff  GA100
\t21c3  TU116
\t2302  GH100
\t2321  GH100 [H100L 94GB]
\t2480  GA104 [Reserved Dev ID A]
\t24c0  GA104 [Initial Dev ID B]
"""
# ... and Ubuntu 22.04's 0.0~2022.01.22-1ubuntu0.1, older than the knowledge's name for these two
UBUNTU_2204 = """\
10de  NVIDIA Corporation
\t2302  GA103
\t2321  GA103
"""


def unknown(devices: list[PciDevice]) -> list[tuple[str, str, str]]:
    """Devices the knowledge does not know by id with the compute capability of their chip code
    (an id of gpus.toml's [[renamed]] is checked against the chip the knowledge keeps)."""
    kb = load_knowledge()
    renamed = {r.device_id: r for r in renamed_rows(read_table("gpus"))}
    wrong = []
    for device in devices:
        chip = kb.gpu_by_pci_id(device.device_id)
        row = renamed.get(device.device_id)
        code = row.chip if row is not None and chip_base(device.chip) == row.pci_ids_chip else device.chip
        cc = chip_capability(code)
        assert cc is not None
        if chip is None or str(chip.cc) != cc.cc or (row is not None and chip.name != row.chip):
            wrong.append((f"{device.device_id:04x}", device.chip, device.product))
    return wrong


def test_every_nvidia_gpu_of_pci_ids_is_known_with_its_compute_capability() -> None:
    require_tool("pci.ids (/usr/share/misc/pci.ids, Debian package pci.ids)", PCI_IDS.exists())
    devices = nvidia_devices(PCI_IDS.read_text(encoding="utf-8", errors="replace"))
    assert len(devices) > 850  # Ubuntu 22.04's has 872, Debian 12's 961, Ubuntu 24.04's 1060
    assert unknown(devices) == []


def test_the_ids_ubuntu_24_04_adds_are_known() -> None:
    devices = nvidia_devices(UBUNTU_2404)
    assert len(devices) == 13
    assert unknown(devices) == []
    kb = load_knowledge()
    assert kb.gpu_by_pci_id(0x20BD).name == "GA100" and str(kb.gpu_by_pci_id(0x20BD).cc) == "8.0"
    assert kb.gpu_by_pci_id(0x1E35).name == "TU102" and str(kb.gpu_by_pci_id(0x1E35).cc) == "7.5"


def test_ubuntu_22_04s_older_name_for_two_hopper_ids_is_not_followed() -> None:
    """2302 and 2321 are GH100 (compute capability 9.0; 2321 is NVIDIA's H100 NVL), not GA103 (8.6)."""
    devices = nvidia_devices(UBUNTU_2204)
    assert [(f"{d.device_id:04x}", d.chip) for d in devices] == [("2302", "GA103"), ("2321", "GA103")]
    assert unknown(devices) == []
    kb = load_knowledge()
    for device in devices:
        chip = kb.gpu_by_pci_id(device.device_id)
        assert chip is not None and (chip.name, str(chip.cc)) == ("GH100", "9.0")
    # the generator keeps GH100 whatever order the pci.ids files come in
    regenerated = apply_renamed({d.device_id: d for d in devices}, renamed_rows(read_table("gpus")))
    assert {f"{k:04x}": d.chip for k, d in regenerated.items()} == {"2302": "GH100", "2321": "GH100"}
    for row in renamed_rows(read_table("gpus")):
        assert "pci.ids" in row.source  # expanded from the short name: a source, not a bare claim


def test_the_generator_reads_chip_codes_and_names() -> None:
    text = (
        "10de  NVIDIA Corporation\n"
        "\t0fe9  GK107M [GeForce GT 750M Mac Edition]\n"
        "\t0e1b  GK107 HDMI Audio Controller\n"
        "\t2330  GH100 [H100 SXM5 80GB]\n"
        "\t25ac  GA107BM / GN20-P0-R-K2 [GeForce RTX 3050 6GB Laptop GPU]\n"
        "\t2302  GH100\n"
        "10df  Emulex Corporation\n"
        "\t0720  OneConnect NIC (Skyhawk)\n"
    )
    assert [(f"{d.device_id:04x}", d.chip, d.product) for d in nvidia_devices(text)] == [
        ("0fe9", "GK107M", "GeForce GT 750M Mac Edition"),
        ("2330", "GH100", "H100 SXM5 80GB"),
        ("25ac", "GA107BM", "GeForce RTX 3050 6GB Laptop GPU"),
        ("2302", "GH100", "GH100"),
    ]
