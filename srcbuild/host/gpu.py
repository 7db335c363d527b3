"""NVIDIA GPUs and the driver: read ``nvidia-smi``, ``lspci -nn`` and ``/proc/driver/nvidia/version``.

The parsers take the text those tools print (so ``recommend --lspci FILE`` can read another
machine's pasted output) and the probe runs them here. Compute capabilities come from
``nvidia-smi`` when the driver reports them (``compute_cap`` exists from driver 510 on), otherwise
from the PCI device id looked up in the knowledge base; a marketing name alone is used last, and
an ambiguous one (GTX 860M is GK104 *or* GM107) is reported with its candidates.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from srcbuild.capability import ComputeCapability
from srcbuild.host.facts import DriverInfo, GpuInfo
from srcbuild.host.locate import Runner, read_text

NVIDIA_VENDOR = "10de"
# The query asked of nvidia-smi; drivers before 510 do not know compute_cap, so a second query drops it.
SMI_QUERY = ("name", "compute_cap", "driver_version", "pci.device_id")
SMI_QUERY_OLD = ("name", "driver_version", "pci.device_id")
PROC_DRIVER_VERSION = Path("proc/driver/nvidia/version")

_LSPCI_RE = re.compile(
    r"^(?P<slot>\S+)\s+(?P<cls>[^\[]*?)\s*\[(?P<class_id>[0-9a-fA-F]{4})\]:\s*(?P<desc>.*?)\s*"
    r"\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]"
)
_DRIVER_RE = re.compile(r"Kernel Module\s+(?:for\s+\S+\s+)?(\d+\.\d+(?:\.\d+)?)")
# nvidia-smi's default table (every layout from R340 to R580): the driver line and one row per GPU
SMI_TABLE_DRIVER = re.compile(r"Driver Version:\s*(?P<driver>\d+\.\d+(?:\.\d+)?)")
SMI_TABLE_ROW = re.compile(r"^\|\s*(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s*\|")
_BRACKET_RE = re.compile(r"\[([^\]]+)\]")


@dataclass(frozen=True)
class SmiGpu:
    """One GPU line of nvidia-smi output."""

    name: str
    cc: str | None
    driver: str | None
    device_id: int | None


@dataclass(frozen=True)
class PciGpu:
    """One NVIDIA display function of ``lspci -nn``."""

    slot: str
    description: str  # "NVIDIA Corporation GK107M [GeForce GT 750M]"
    device_id: int

    @property
    def pci_id(self) -> str:
        return f"{NVIDIA_VENDOR}:{self.device_id:04x}"

    @property
    def marketing_name(self) -> str | None:
        """The product name lspci shows in brackets, e.g. "GeForce GT 750M"."""
        names = _BRACKET_RE.findall(self.description)
        return names[-1] if names else None


def parse_lspci(text: str) -> list[PciGpu]:
    """NVIDIA display controllers (class 03xx) in ``lspci -nn`` output; audio and USB functions skipped."""
    found = []
    for line in text.splitlines():
        m = _LSPCI_RE.match(line.strip())
        if not m or m.group("vendor").lower() != NVIDIA_VENDOR or not m.group("class_id").startswith("03"):
            continue
        found.append(PciGpu(m.group("slot"), m.group("desc"), int(m.group("device"), 16)))
    return found


def parse_proc_driver_version(text: str) -> str | None:
    """The version in ``/proc/driver/nvidia/version`` ("NVRM version: ... Kernel Module  470.82.01 ...")."""
    m = _DRIVER_RE.search(text)
    return m.group(1) if m else None


def _smi_value(value: str) -> str | None:
    value = value.strip()
    return None if not value or value.startswith("[") or value.upper() == "N/A" else value


def _device_id(value: str | None) -> int | None:
    """nvidia-smi's ``pci.device_id`` is "0x0FE410DE": device id in the high 16 bits."""
    if not value:
        return None
    try:
        number = int(value, 16)
    except ValueError:
        return None
    return number >> 16 if number > 0xFFFF else number


def parse_nvidia_smi(text: str) -> tuple[list[SmiGpu], str | None]:
    """GPUs and driver version from nvidia-smi output: the CSV query form or the default table."""
    if "Driver Version:" in text:
        driver_match = SMI_TABLE_DRIVER.search(text)
        driver = driver_match.group("driver") if driver_match else None
        gpus = [
            SmiGpu(m.group("name").strip(), None, driver, None)
            for m in (SMI_TABLE_ROW.match(line) for line in text.splitlines())
            if m
        ]
        return gpus, driver
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if not line.strip() or len(fields) < 2:
            continue
        if (len(fields) >= 3 and re.match(r"^\d+\.\d+$", fields[1])) or fields[1].startswith("["):
            name, cc, driver = fields[0], _smi_value(fields[1]), _smi_value(fields[2]) if len(fields) > 2 else None
            dev = fields[3] if len(fields) > 3 else None
        else:  # name, driver_version[, pci.device_id]
            name, cc, driver = fields[0], None, _smi_value(fields[1])
            dev = fields[2] if len(fields) > 2 else None
        gpus.append(SmiGpu(name, cc, driver, _device_id(_smi_value(dev) if dev else None)))
    driver = next((g.driver for g in gpus if g.driver), None)
    return gpus, driver


def resolve_pci(device_id: int, name: str | None, source: str) -> GpuInfo:
    """A GPU from its PCI device id, with chip and compute capability from the knowledge base."""
    from srcbuild.knowledge import load_knowledge

    chip = load_knowledge().gpu_by_pci_id(device_id)
    pci_id = f"{NVIDIA_VENDOR}:{device_id:04x}"
    if chip is None:
        return GpuInfo(name or f"NVIDIA device {pci_id}", None, source, pci_id=pci_id)
    display = name or chip.device_name(device_id) or chip.name
    return GpuInfo(display, chip.cc, source, pci_id=pci_id, chip=chip.name)


def resolve_name(name: str, source: str, cc: str | None = None, device_id: int | None = None) -> GpuInfo:
    """A GPU from what nvidia-smi (or the user) calls it; the device id wins over the name.

    An ambiguous name without a device id keeps ``cc`` None and lists its candidates.
    """
    if device_id is not None:
        info = resolve_pci(device_id, name, source)
        if info.cc is not None:
            return info
    if cc:
        try:
            return GpuInfo(name, ComputeCapability.parse(cc), source)
        except ValueError:
            pass
    from srcbuild.knowledge import gpu_names, load_knowledge

    kb = load_knowledge()
    models = kb.gpus_by_name(gpu_names.bare_name(name)) or kb.gpus_by_name(name)
    if not models:  # "NVIDIA H100 80GB HBM3": drop the words pci.ids does not have
        models = gpu_names.find_by_words(kb.gpu_chips, name)
    ccs = sorted({m.cc for m in models})
    if len(ccs) == 1:
        chips = sorted({m.chip for m in models})
        names = sorted({m.name for m in models})
        return GpuInfo(names[0] if len(names) == 1 else name, ccs[0], source, chip="/".join(chips))
    candidates = tuple(f"{m.chip} (compute capability {m.cc}, pci {', '.join(m.pci_id_labels)})" for m in models)
    return GpuInfo(name, None, source, candidates=candidates)


def gpus_from_nvidia_smi(text: str, source: str = "nvidia-smi") -> tuple[list[GpuInfo], DriverInfo | None]:
    gpus, driver = parse_nvidia_smi(text)
    infos = [resolve_name(g.name, source, g.cc, g.device_id) for g in gpus]
    return infos, DriverInfo(driver, source) if driver else None


def gpus_from_lspci(text: str, source: str = "lspci") -> list[GpuInfo]:
    return [resolve_pci(p.device_id, p.marketing_name, source) for p in parse_lspci(text)]


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
                gpus, driver = gpus_from_nvidia_smi(out)
                break
        if not gpus:
            missing.append("nvidia-smi: found, but it did not answer (is the NVIDIA kernel module loaded?)")
    else:
        missing.append("nvidia-smi: not found (no NVIDIA driver, or not on PATH)")
    if not gpus:
        lspci = which("lspci")
        out = run([str(lspci), "-nn"], timeout=5) if lspci else None
        if lspci is None:
            missing.append("lspci: not found (install pciutils to detect GPUs without a driver)")
        elif out is None:
            missing.append("lspci: `lspci -nn` failed")
        else:
            gpus = gpus_from_lspci(out)
            if not gpus:
                missing.append("GPU: `lspci -nn` lists no NVIDIA display controller (vendor 10de)")
    if driver is None:
        proc = root / PROC_DRIVER_VERSION
        text = read_text(proc)
        version = parse_proc_driver_version(text) if text else None
        if version:
            driver = DriverInfo(version, "/" + str(PROC_DRIVER_VERSION))
    return gpus, driver, missing
