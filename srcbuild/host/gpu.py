"""NVIDIA GPUs and the driver of this machine: ask ``nvidia-smi``, else ``lspci -nn``, and read
``/proc/driver/nvidia/version``. ``lspci`` is not run where sysfs already shows that the PCI bus has
no NVIDIA display function (``nvidia_on_pci_bus``): the names it would add are of no use then.

The outputs are read by ``srcbuild.host.parsers`` (the same parsers ``recommend --paste`` uses for
another machine's output) and the GPUs they list identified by ``srcbuild.host.identify``: compute
capabilities come from ``nvidia-smi`` when the driver reports them (``compute_cap`` exists from
driver 510 on), otherwise from the PCI device id looked up in the knowledge base; a marketing name
alone is used last, and an ambiguous one (GTX 860M is GK104 *or* GM107) is reported with its
candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from srcbuild.host.facts import DriverInfo, GpuInfo
from srcbuild.host.identify import identify
from srcbuild.host.locate import Runner, read_text
from srcbuild.host.parsers import GpuListing, parse_lspci_lines, parse_proc_driver_version, parse_smi_csv

# The query asked of nvidia-smi; drivers before 510 do not know compute_cap, so a second query drops it.
SMI_QUERY = ("name", "compute_cap", "driver_version", "pci.device_id")
SMI_QUERY_OLD = ("name", "driver_version", "pci.device_id")
PROC_DRIVER_VERSION = Path("proc/driver/nvidia/version")
PCI_DEVICES = Path("sys/bus/pci/devices")


def _identified(listing: GpuListing | None, source: str) -> tuple[list[GpuInfo], DriverInfo | None]:
    """The GPUs of a tool's output, identified, and the driver it names."""
    if listing is None:
        return [], None
    from srcbuild.knowledge import load_knowledge

    kb = load_knowledge()
    driver = DriverInfo(listing.driver, source) if listing.driver else None
    return [identify(kb, gpu, source, driver) for gpu in listing.gpus], driver


def nvidia_on_pci_bus(root: Path) -> bool | None:
    """Whether sysfs lists an NVIDIA display function (vendor ``0x10de``, class ``0x03xxxx``: what
    ``lspci -nn`` reads on Linux, without the names); None where it lists no device or one cannot
    be read (a container without ``/sys``), and only ``lspci`` can answer."""
    try:
        devices = list((root / PCI_DEVICES).iterdir())
    except OSError:
        return None
    if not devices:
        return None
    for device in devices:
        vendor, kind = read_text(device / "vendor"), read_text(device / "class")
        if vendor is None or kind is None:
            return None
        if vendor.strip() == "0x10de" and kind.strip().startswith("0x03"):
            return True
    return False


def probe_gpus(
    root: Path, run: Runner, which: Callable[[str], Path | None]
) -> tuple[list[GpuInfo], DriverInfo | None, list[str]]:
    """GPUs and driver of this machine; the third item lists what could not be asked."""
    missing: list[str] = []
    gpus: list[GpuInfo] = []
    driver: DriverInfo | None = None
    smi = which("nvidia-smi")
    if smi is not None:
        for query in (SMI_QUERY, SMI_QUERY_OLD):
            out = run([str(smi), f"--query-gpu={','.join(query)}", "--format=csv,noheader"], timeout=10)
            if out is not None and out.strip():
                gpus, driver = _identified(parse_smi_csv(out), "nvidia-smi")
                break
        if not gpus:
            missing.append("nvidia-smi: found, but it did not answer (is the NVIDIA kernel module loaded?)")
    else:
        missing.append("nvidia-smi: not found (no NVIDIA driver, or not on PATH)")
    if not gpus and nvidia_on_pci_bus(root) is False:
        missing.append(f"GPU: no NVIDIA display controller on the PCI bus (vendor 10de in /{PCI_DEVICES})")
    elif not gpus:
        lspci = which("lspci")
        out = run([str(lspci), "-nn"], timeout=5) if lspci else None
        if lspci is None:
            missing.append("lspci: not found (install pciutils to detect GPUs without a driver)")
        elif out is None:
            missing.append("lspci: `lspci -nn` failed")
        else:
            gpus, _ = _identified(parse_lspci_lines(out), "lspci")
            if not gpus:
                missing.append("GPU: `lspci -nn` lists no NVIDIA display controller (vendor 10de)")
    if driver is None:
        proc = root / PROC_DRIVER_VERSION
        text = read_text(proc)
        version = parse_proc_driver_version(text) if text else None
        if version:
            driver = DriverInfo(version, "/" + str(PROC_DRIVER_VERSION))
    return gpus, driver, missing
