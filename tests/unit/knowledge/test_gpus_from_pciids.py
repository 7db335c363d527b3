"""gpus.toml agrees with the PCI id database installed here (Debian's pci.ids package)."""

from __future__ import annotations

from pathlib import Path

from srcbuild.capability import chip_capability
from srcbuild.knowledge import load_knowledge
from srcbuild.knowledge.pciids import nvidia_devices
from tests.conftest import require_tool

PCI_IDS = Path("/usr/share/misc/pci.ids")


def test_every_nvidia_gpu_of_pci_ids_is_known_with_its_compute_capability() -> None:
    require_tool("pci.ids (/usr/share/misc/pci.ids, Debian package pci.ids)", PCI_IDS.exists())
    kb = load_knowledge()
    devices = nvidia_devices(PCI_IDS.read_text(encoding="utf-8", errors="replace"))
    assert len(devices) > 900
    wrong = []
    for device in devices:
        chip = kb.gpu_by_pci_id(device.device_id)
        row = chip_capability(device.chip)
        assert row is not None
        if chip is None or str(chip.cc) != row.cc:
            wrong.append((f"{device.device_id:04x}", device.chip, device.product))
    assert wrong == []


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
