"""What people paste about their GPU: every output format of ``lspci``, ``nvidia-smi`` and ``/proc``.

``read_paste(text)`` finds each recognised part of a pasted text and returns the GPUs and driver
they describe, as printed (``PastedGpu``); ``srcbuild.host.identify`` turns them into GPUs with a
compute capability. Formats:

- ``lspci`` (``01:00.0 VGA compatible controller: NVIDIA Corporation GK107M [GeForce GT 750M]``),
  ``lspci -nn`` (with ``[0300]`` and ``[10de:0fe4]``), ``-v``/``-vv`` (indented detail lines),
  ``-mm`` (quoted fields) and ``-vmm`` (``Slot:``/``Device:`` records);
- ``nvidia-smi``'s default table of every driver era (R340 to R580; names cut short with "..."),
  ``nvidia-smi -L`` and ``nvidia-smi --query-gpu=... --format=csv`` with or without its header;
- ``/proc/driver/nvidia/gpus/*/information`` (``Model:``) and ``/proc/driver/nvidia/version``.

Parsers never raise on odd text: what they cannot read is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from srcbuild.host.gpu import SMI_TABLE_DRIVER, SMI_TABLE_ROW, parse_nvidia_smi, parse_proc_driver_version

NVIDIA_VENDOR = "10de"
TRUNCATED = "..."

_SLOT = r"(?P<slot>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
# lspci, lspci -nn, first line of -v/-vv:
# "01:00.0 3D controller [0302]: NVIDIA Corporation GK210GL [Tesla K80] [10de:102d] (rev a1)"
_LSPCI_LINE = re.compile(_SLOT + r"\s+(?P<cls>[^:\[]+?)(?:\s*\[(?P<class_id>[0-9a-fA-F]{4})\])?:\s*(?P<rest>.*)$")
_LSPCI_IDS = re.compile(r"\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]")
_CHIP_AND_NAME = re.compile(
    r"^(?P<chip>[A-Z]{1,2}[A-Z0-9]*\d[A-Za-z0-9]*)(?:\s*/\s*[^\[]*?)?\s*(?:\[(?P<name>[^\]]*)\])?"
)
_VENDOR = re.compile(r"^NVIDIA Corporation\s*(?:\[10de\])?\s*", re.IGNORECASE)
_DISPLAY_CLASS = re.compile(r"(?i)^(vga compatible controller|3d controller|display controller)$")
# lspci -mm:
# 01:00.0 "VGA compatible controller" "NVIDIA Corporation" "GK106 [GeForce GTX 660 OEM]" -ra1 "Dell" "Device 0000"
_MM_LINE = re.compile(_SLOT + r'\s+"(?P<cls>[^"]*)"\s+"(?P<vendor>[^"]*)"\s+"(?P<device>[^"]*)"')
_MM_ID = re.compile(r"\s*\[([0-9a-fA-F]{4})\]$")
# nvidia-smi
_SMI_HEADER = re.compile(r"NVIDIA-SMI\s+(?P<smi>\d+\.\d+(?:\.\d+)?)")
_SMI_LIST = re.compile(r"^GPU\s+(?P<index>\d+):\s*(?P<name>.+?)\s*\(UUID:\s*GPU-[^)]*\)\s*$")
# /proc/driver/nvidia/gpus/*/information
_PROC_MODEL = re.compile(r"^Model:\s*(?P<name>.+?)\s*$")
_PROC_BUS = re.compile(r"^Bus Location:\s*(?P<slot>\S+)")


@dataclass(frozen=True)
class PastedGpu:
    """One GPU as a pasted text shows it; every field may be missing."""

    name: str | None = None  # "GeForce GT 750M Mac Edition", "NVIDIA GeForce ..." (cut short)
    chip: str | None = None  # "GK107M", from lspci
    device_id: int | None = None  # 0x0fe9, from lspci -nn or nvidia-smi's pci.device_id
    cc: str | None = None  # "9.0", from nvidia-smi's compute_cap

    @property
    def truncated(self) -> bool:
        return bool(self.name and self.name.endswith(TRUNCATED))


@dataclass(frozen=True)
class PastePart:
    """One recognised part of a paste: its format, its GPUs and the driver it names."""

    format: str  # "lspci", "lspci -nn", "lspci -mm", "nvidia-smi table (R470)", ...
    gpus: tuple[PastedGpu, ...]
    driver: str | None = None


def _lspci_rest(rest: str) -> tuple[str, str | None, str | None, int | None] | None:
    """Vendor check and (description, chip, name, device id) of the part of an lspci line after the class."""
    ids = _LSPCI_IDS.search(rest)
    if ids is not None and ids.group("vendor").lower() != NVIDIA_VENDOR:
        return None
    vendor = _VENDOR.match(rest)
    if vendor is None:
        return None
    desc = rest[vendor.end() :]
    device_id = int(ids.group("device"), 16) if ids else None
    if ids is not None:
        desc = desc[: desc.find(ids.group(0))] if ids.group(0) in desc else desc
    desc = re.sub(r"\s*\(rev [0-9a-fA-F]+\).*$", "", desc).strip()
    m = _CHIP_AND_NAME.match(desc)
    chip = m.group("chip") if m else None
    name = m.group("name") if m and m.group("name") else None
    if name is None:
        bracket = re.search(r"\[([^\]]+)\]", desc)
        name = bracket.group(1) if bracket else None
    return desc, chip, name, device_id


def parse_lspci_lines(text: str) -> PastePart | None:
    """``lspci``, ``lspci -nn``, ``-v``, ``-vv`` (and combinations): NVIDIA display functions."""
    gpus: list[PastedGpu] = []
    seen_lspci = False
    with_ids = False
    for raw in text.splitlines():
        if raw[:1] in ("\t", " ") and raw.strip():
            continue  # -v/-vv detail lines
        m = _LSPCI_LINE.match(raw.strip())
        if m is None:
            continue
        seen_lspci = True
        with_ids = with_ids or m.group("class_id") is not None
        cls_id = m.group("class_id")
        if cls_id is not None and not cls_id.startswith("03"):
            continue
        if cls_id is None and not _DISPLAY_CLASS.match(m.group("cls").strip()):
            continue
        read = _lspci_rest(m.group("rest"))
        if read is None:
            continue
        _, chip, name, device_id = read
        gpus.append(PastedGpu(name=name, chip=chip, device_id=device_id))
    if not seen_lspci:
        return None
    return PastePart("lspci -nn" if with_ids else "lspci", tuple(gpus))


def parse_lspci_mm(text: str) -> PastePart | None:
    """``lspci -mm`` / ``lspci -nnmm`` (one quoted record per line) and ``lspci -vmm`` records."""
    gpus: list[PastedGpu] = []
    seen = False
    for line in text.splitlines():
        m = _MM_LINE.match(line.strip())
        if m is None:
            continue
        seen = True
        cls = _MM_ID.sub("", m.group("cls"))
        vendor, device = m.group("vendor"), m.group("device")
        vendor_id = _MM_ID.search(vendor)
        if not _DISPLAY_CLASS.match(cls) or not (
            vendor.lower().startswith("nvidia") or (vendor_id and vendor_id.group(1).lower() == NVIDIA_VENDOR)
        ):
            continue
        gpus.append(_mm_device(device))
    records = _vmm_records(text)
    for record in records:
        seen = True
        cls = _MM_ID.sub("", record.get("Class", ""))
        if _DISPLAY_CLASS.match(cls) and record.get("Vendor", "").lower().startswith("nvidia"):
            gpus.append(_mm_device(record.get("Device", "")))
    if not seen:
        return None
    return PastePart("lspci -vmm" if records else "lspci -mm", tuple(gpus))


def _mm_device(device: str) -> PastedGpu:
    device_id = None
    ident = _MM_ID.search(device)
    if ident is not None:
        device_id = int(ident.group(1), 16)
        device = device[: ident.start()]
    m = _CHIP_AND_NAME.match(device.strip())
    chip = m.group("chip") if m else None
    name = m.group("name") if m and m.group("name") else None
    return PastedGpu(name=name, chip=chip, device_id=device_id)


def _vmm_records(text: str) -> list[dict[str, str]]:
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in [*text.splitlines(), ""]:
        key, sep, value = line.partition(":")
        if sep and key in ("Slot", "Class", "Vendor", "Device", "SVendor", "SDevice", "Rev", "ProgIf"):
            current[key] = value.strip()
        elif not line.strip() and current:
            if "Slot" in current and "Device" in current:
                records.append(current)
            current = {}
    return records


def parse_smi_table(text: str) -> PastePart | None:
    """``nvidia-smi``'s default table (every layout from R340 to R580)."""
    driver = SMI_TABLE_DRIVER.search(text)
    if driver is None and _SMI_HEADER.search(text) is None:
        return None
    version = driver.group("driver") if driver else _SMI_HEADER.search(text).group("smi")  # type: ignore[union-attr]
    gpus = []
    for line in text.splitlines():
        m = SMI_TABLE_ROW.match(line.strip())
        if m is not None:
            gpus.append(PastedGpu(name=m.group("name").strip()))
    return PastePart(f"nvidia-smi table (R{version.split('.')[0]})", tuple(gpus), version)


def parse_smi_list(text: str) -> PastePart | None:
    """``nvidia-smi -L``: ``GPU 0: NVIDIA GeForce GTX 860M (UUID: GPU-...)``."""
    gpus = [
        PastedGpu(name=m.group("name"))
        for m in (_SMI_LIST.match(line.strip()) for line in text.splitlines())
        if m is not None
    ]
    return PastePart("nvidia-smi -L", tuple(gpus)) if gpus else None


def parse_smi_csv(text: str) -> PastePart | None:
    """``nvidia-smi --query-gpu=... --format=csv`` (header names the columns) or ``csv,noheader``."""
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s*name\s*,", line)), None)
    if header_at is not None:
        keys = [re.sub(r"\s*\[.*\]$", "", k.strip()) for k in lines[header_at].split(",")]
        gpus = []
        driver = None
        for line in lines[header_at + 1 :]:
            values = [v.strip() for v in line.split(",")]
            if len(values) != len(keys):
                break
            row = dict(zip(keys, values))
            driver = driver or _value(row.get("driver_version"))
            gpus.append(
                PastedGpu(
                    name=_value(row.get("name")),
                    device_id=_device_id(_value(row.get("pci.device_id"))),
                    cc=_cc_value(row.get("compute_cap")),
                )
            )
        return PastePart("nvidia-smi --query-gpu csv", tuple(gpus), driver) if gpus else None
    if not lines or any(line.lstrip().startswith(("|", "+")) for line in lines):
        return None
    if not all(line.count(",") >= 1 and re.search(r"\d+\.\d+", line) for line in lines):
        return None
    found, driver = parse_nvidia_smi(text)
    if not found:
        return None
    gpus = [PastedGpu(name=g.name, device_id=g.device_id, cc=_cc_value(g.cc)) for g in found]
    return PastePart("nvidia-smi --query-gpu csv,noheader", tuple(gpus), driver)


def _value(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if not value or value.startswith("[") or value.upper() == "N/A" else value


def _cc_value(value: str | None) -> str | None:
    value = _value(value)
    return value if value and re.match(r"^\d{1,2}\.\d$", value) else None


def _device_id(value: str | None) -> int | None:
    """nvidia-smi's ``pci.device_id`` is "0x0FE410DE": the device id in the high 16 bits."""
    if not value:
        return None
    try:
        number = int(value, 16)
    except ValueError:
        return None
    return (number >> 16) & 0xFFFF if number > 0xFFFF else number


def parse_proc_information(text: str) -> PastePart | None:
    """``/proc/driver/nvidia/gpus/*/information``: one ``Model:`` line per GPU (files may be concatenated)."""
    lines = [line.strip() for line in text.splitlines()]
    if not any(_PROC_BUS.match(line) or line.startswith(("GPU UUID:", "Video BIOS:")) for line in lines):
        return None
    gpus = [PastedGpu(name=m.group("name")) for m in (_PROC_MODEL.match(line) for line in lines) if m]
    return PastePart("/proc/driver/nvidia/gpus/*/information", tuple(gpus)) if gpus else None


def parse_proc_version(text: str) -> PastePart | None:
    """``/proc/driver/nvidia/version``: the driver only."""
    if "NVRM version" not in text:
        return None
    version = parse_proc_driver_version(text)
    return PastePart("/proc/driver/nvidia/version", (), version) if version else None


Parser = Callable[[str], "PastePart | None"]
LSPCI_PARSERS: tuple[Parser, ...] = (parse_lspci_mm, parse_lspci_lines)
SMI_PARSERS: tuple[Parser, ...] = (parse_smi_table, parse_smi_list, parse_smi_csv)
PROC_PARSERS: tuple[Parser, ...] = (parse_proc_information, parse_proc_version)
ALL_PARSERS: tuple[Parser, ...] = (*SMI_PARSERS, *PROC_PARSERS, *LSPCI_PARSERS)


def read_paste(text: str, parsers: tuple[Parser, ...] = ALL_PARSERS) -> list[PastePart]:
    """Every part of ``text`` one of ``parsers`` recognises (a paste may hold several commands' output)."""
    parts = []
    for parse in parsers:
        part = parse(text)
        if part is not None:
            parts.append(part)
        if part is not None and parse is parse_lspci_mm and part.gpus:
            break  # -mm lines also look like plain lspci lines
    return parts
