"""Every tool output srcbuild reads about a machine, parsed: text in, typed values out.

The probes (``srcbuild.host.gpu``, ``.mpi``, ``.system``, ``.toolchain``) run the tools and hand
their output here; ``srcbuild recommend --paste`` hands what a user pasted from another machine to
the same functions. Nothing here runs a process, reads a file or looks anything up: a parser
never raises on odd text, what it cannot read is left out (``None``, or no entry).

GPUs (one ``GpuListing`` per recognised output, its GPUs as printed: ``ListedGpu``):

- ``lspci`` (``01:00.0 VGA compatible controller: NVIDIA Corporation GK107M [GeForce GT 750M]``),
  ``lspci -nn`` (with ``[0300]`` and ``[10de:0fe4]``: what the probe runs), ``-v``/``-vv``
  (indented detail lines), ``-mm`` (quoted fields) and ``-vmm`` (``Slot:``/``Device:`` records);
- ``nvidia-smi``'s default table of every driver era (R340 to R580; names cut short with "..."),
  ``nvidia-smi -L`` and ``nvidia-smi --query-gpu=... --format=csv`` with or without its header
  (the probe asks ``csv,noheader``);
- ``/proc/driver/nvidia/gpus/*/information`` (``Model:``) and ``/proc/driver/nvidia/version``.

The rest: ``mpicc --showme:version``, ``mpichversion`` and ``mpirun --version`` (MPI
implementation and version), ``nvcc --version``, ``gcc -dumpfullversion -dumpversion``, the
``#define`` version lines of the cuDNN and NCCL headers, ``/proc/meminfo`` and
``docker info --format '{{json .Runtimes}}'``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from srcbuild.patterns import LazyPattern
from srcbuild.records import record

NVIDIA_VENDOR = "10de"
TRUNCATED = "..."

_SLOT = r"(?P<slot>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
# lspci, lspci -nn, first line of -v/-vv:
# "01:00.0 3D controller [0302]: NVIDIA Corporation GK210GL [Tesla K80] [10de:102d] (rev a1)"
_LSPCI_LINE = LazyPattern(_SLOT + r"\s+(?P<cls>[^:\[]+?)(?:\s*\[(?P<class_id>[0-9a-fA-F]{4})\])?:\s*(?P<rest>.*)$")
_LSPCI_IDS = LazyPattern(r"\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]")
_CHIP_AND_NAME = LazyPattern(
    r"^(?P<chip>[A-Z]{1,2}[A-Z0-9]*\d[A-Za-z0-9]*)(?:\s*/\s*[^\[]*?)?\s*(?:\[(?P<name>[^\]]*)\])?"
)
_VENDOR = LazyPattern(r"^NVIDIA Corporation\s*(?:\[10de\])?\s*", re.IGNORECASE)
_DISPLAY_CLASS = LazyPattern(r"(?i)^(vga compatible controller|3d controller|display controller)$")
# lspci -mm:
# 01:00.0 "VGA compatible controller" "NVIDIA Corporation" "GK106 [GeForce GTX 660 OEM]" -ra1 "Dell" "Device 0000"
_MM_LINE = LazyPattern(_SLOT + r'\s+"(?P<cls>[^"]*)"\s+"(?P<vendor>[^"]*)"\s+"(?P<device>[^"]*)"')
_MM_ID = LazyPattern(r"\s*\[([0-9a-fA-F]{4})\]$")
# nvidia-smi's default table (every layout from R340 to R580): the driver line and one row per GPU
_SMI_TABLE_DRIVER = LazyPattern(r"Driver Version:\s*(?P<driver>\d+\.\d+(?:\.\d+)?)")
_SMI_TABLE_ROW = LazyPattern(r"^\|\s*(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s*\|")
_SMI_HEADER = LazyPattern(r"NVIDIA-SMI\s+(?P<smi>\d+\.\d+(?:\.\d+)?)")
_SMI_LIST = LazyPattern(r"^GPU\s+(?P<index>\d+):\s*(?P<name>.+?)\s*\(UUID:\s*GPU-[^)]*\)\s*$")
# /proc/driver/nvidia/gpus/*/information
_PROC_MODEL = LazyPattern(r"^Model:\s*(?P<name>.+?)\s*$")
_PROC_BUS = LazyPattern(r"^Bus Location:\s*(?P<slot>\S+)")
# /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  ..."
_PROC_DRIVER = LazyPattern(r"Kernel Module\s+(?:for\s+\S+\s+)?(\d+\.\d+(?:\.\d+)?)")
_MPI_VERSIONS = (
    ("openmpi", LazyPattern(r"Open MPI\)?\s+v?(\d+\.\d+(?:\.\d+)?)")),
    ("mpich", LazyPattern(r"MPICH Version:\s*(\d+\.\d+(?:\.\d+)?)")),
    ("intel-mpi", LazyPattern(r"Intel\(R\) MPI Library.*?Version\s+(\d+(?:\.\d+)*)", re.S)),
    ("mpich", LazyPattern(r"HYDRA build details:.*?Version:\s*(\d+\.\d+(?:\.\d+)?)", re.S)),
)
_NVCC = LazyPattern(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
_DEFINE = LazyPattern(r"^\s*#\s*define\s+(\w+)\s+(\d+)", re.MULTILINE)
_MEMINFO = LazyPattern(r"^(\w+):\s+(\d+) kB", re.MULTILINE)


@record
class ListedGpu:
    """One GPU as a tool's output shows it; every field may be missing."""

    name: str | None = None  # "GeForce GT 750M Mac Edition", "NVIDIA GeForce ..." (cut short)
    chip: str | None = None  # "GK107M", from lspci
    device_id: int | None = None  # 0x0fe9, from lspci -nn or nvidia-smi's pci.device_id
    cc: str | None = None  # "9.0", from nvidia-smi's compute_cap

    @property
    def truncated(self) -> bool:
        return bool(self.name and self.name.endswith(TRUNCATED))


@record
class GpuListing:
    """One recognised tool output: its format, its GPUs and the driver it names."""

    format: str  # "lspci", "lspci -nn", "lspci -mm", "nvidia-smi table (R470)", ...
    gpus: tuple[ListedGpu, ...]
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


def parse_lspci_lines(text: str) -> GpuListing | None:
    """``lspci``, ``lspci -nn``, ``-v``, ``-vv`` (and combinations): NVIDIA display functions."""
    gpus: list[ListedGpu] = []
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
        gpus.append(ListedGpu(name=name, chip=chip, device_id=device_id))
    if not seen_lspci:
        return None
    return GpuListing("lspci -nn" if with_ids else "lspci", tuple(gpus))


def parse_lspci_mm(text: str) -> GpuListing | None:
    """``lspci -mm`` / ``lspci -nnmm`` (one quoted record per line) and ``lspci -vmm`` records."""
    gpus: list[ListedGpu] = []
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
    for fields in records:
        seen = True
        cls = _MM_ID.sub("", fields.get("Class", ""))
        if _DISPLAY_CLASS.match(cls) and fields.get("Vendor", "").lower().startswith("nvidia"):
            gpus.append(_mm_device(fields.get("Device", "")))
    if not seen:
        return None
    return GpuListing("lspci -vmm" if records else "lspci -mm", tuple(gpus))


def _mm_device(device: str) -> ListedGpu:
    device_id = None
    ident = _MM_ID.search(device)
    if ident is not None:
        device_id = int(ident.group(1), 16)
        device = device[: ident.start()]
    m = _CHIP_AND_NAME.match(device.strip())
    chip = m.group("chip") if m else None
    name = m.group("name") if m and m.group("name") else None
    return ListedGpu(name=name, chip=chip, device_id=device_id)


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


def parse_smi_table(text: str) -> GpuListing | None:
    """``nvidia-smi``'s default table (every layout from R340 to R580)."""
    driver = _SMI_TABLE_DRIVER.search(text)
    if driver is None and _SMI_HEADER.search(text) is None:
        return None
    version = driver.group("driver") if driver else _SMI_HEADER.search(text).group("smi")  # type: ignore[union-attr]
    gpus = []
    for line in text.splitlines():
        m = _SMI_TABLE_ROW.match(line.strip())
        if m is not None:
            gpus.append(ListedGpu(name=m.group("name").strip()))
    return GpuListing(f"nvidia-smi table (R{version.split('.')[0]})", tuple(gpus), version)


def parse_smi_list(text: str) -> GpuListing | None:
    """``nvidia-smi -L``: ``GPU 0: NVIDIA GeForce GTX 860M (UUID: GPU-...)``."""
    gpus = [
        ListedGpu(name=m.group("name"))
        for m in (_SMI_LIST.match(line.strip()) for line in text.splitlines())
        if m is not None
    ]
    return GpuListing("nvidia-smi -L", tuple(gpus)) if gpus else None


def parse_smi_csv(text: str) -> GpuListing | None:
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
                ListedGpu(
                    name=_value(row.get("name")),
                    device_id=_device_id(_value(row.get("pci.device_id"))),
                    cc=_cc_value(row.get("compute_cap")),
                )
            )
        return GpuListing("nvidia-smi --query-gpu csv", tuple(gpus), driver) if gpus else None
    if not lines or any(line.lstrip().startswith(("|", "+")) for line in lines):
        return None
    if not all(line.count(",") >= 1 and re.search(r"\d+\.\d+", line) for line in lines):
        return None
    gpus = []
    drivers = []
    for line in lines:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 2:
            continue
        if (len(fields) >= 3 and re.match(r"^\d+\.\d+$", fields[1])) or fields[1].startswith("["):
            # name, compute_cap, driver_version[, pci.device_id]: what the probe asks first
            cc, rest = fields[1], fields[2:]
        else:  # name, driver_version[, pci.device_id]: drivers before 510 know no compute_cap
            cc, rest = None, fields[1:]
        driver, device = [*rest, None, None][:2]
        drivers.append(_value(driver))
        gpus.append(ListedGpu(name=fields[0], device_id=_device_id(_value(device)), cc=_cc_value(cc)))
    if not gpus:
        return None
    return GpuListing("nvidia-smi --query-gpu csv,noheader", tuple(gpus), next((d for d in drivers if d), None))


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


def parse_proc_information(text: str) -> GpuListing | None:
    """``/proc/driver/nvidia/gpus/*/information``: one ``Model:`` line per GPU (files may be concatenated)."""
    lines = [line.strip() for line in text.splitlines()]
    if not any(_PROC_BUS.match(line) or line.startswith(("GPU UUID:", "Video BIOS:")) for line in lines):
        return None
    gpus = [ListedGpu(name=m.group("name")) for m in (_PROC_MODEL.match(line) for line in lines) if m]
    return GpuListing("/proc/driver/nvidia/gpus/*/information", tuple(gpus)) if gpus else None


def parse_proc_driver_version(text: str) -> str | None:
    """The version in ``/proc/driver/nvidia/version`` ("NVRM version: ... Kernel Module  470.82.01 ...")."""
    m = _PROC_DRIVER.search(text)
    return m.group(1) if m else None


def parse_proc_version(text: str) -> GpuListing | None:
    """``/proc/driver/nvidia/version``: the driver only."""
    if "NVRM version" not in text:
        return None
    version = parse_proc_driver_version(text)
    return GpuListing("/proc/driver/nvidia/version", (), version) if version else None


Parser = Callable[[str], "GpuListing | None"]
LSPCI_PARSERS: tuple[Parser, ...] = (parse_lspci_mm, parse_lspci_lines)
SMI_PARSERS: tuple[Parser, ...] = (parse_smi_table, parse_smi_list, parse_smi_csv)
PROC_PARSERS: tuple[Parser, ...] = (parse_proc_information, parse_proc_version)
ALL_PARSERS: tuple[Parser, ...] = (*SMI_PARSERS, *PROC_PARSERS, *LSPCI_PARSERS)


def read_paste(text: str, parsers: tuple[Parser, ...] = ALL_PARSERS) -> list[GpuListing]:
    """Every part of ``text`` one of ``parsers`` recognises (a paste may hold several commands' output)."""
    parts = []
    for parse in parsers:
        part = parse(text)
        if part is not None:
            parts.append(part)
        if part is not None and parse is parse_lspci_mm and part.gpus:
            break  # -mm lines also look like plain lspci lines
    return parts


def parse_mpi_version(text: str) -> tuple[str, str] | None:
    """(implementation, version) from ``mpicc --showme:version`` ("mpicc: Open MPI 4.1.4 (Language:
    C)"), ``mpichversion`` ("MPICH Version:      4.0") or ``mpirun --version`` ("mpirun (Open MPI)
    4.1.4", "HYDRA build details: ... Version: 4.0", "Intel(R) MPI Library for Linux* OS, Version
    2021.6")."""
    for implementation, pattern in _MPI_VERSIONS:
        m = pattern.search(text)
        if m:
            return implementation, m.group(1)
    return None


def parse_nvcc_version(text: str) -> str | None:
    """``nvcc --version``: "Cuda compilation tools, release 11.8, V11.8.89" -> "11.8.89"."""
    m = _NVCC.search(text)
    return m.group(2) if m else None


def parse_gcc_version(text: str) -> str | None:
    """``gcc -dumpfullversion -dumpversion``: "11.3.0" (an old gcc, which ignores the first flag, "4.9")."""
    text = text.strip()
    return text if re.match(r"^\d+(\.\d+)*$", text) else None


def parse_header_version(text: str, prefix: str, patch_name: str) -> str | None:
    """ "8.5.0" from a header's ``#define <prefix>MAJOR/MINOR/<patch_name>`` lines (cuDNN:
    ``CUDNN_``, ``PATCHLEVEL``; NCCL: ``NCCL_``, ``PATCH``); None without a major and a minor."""
    defines = dict(_DEFINE.findall(text))
    parts = [defines.get(f"{prefix}MAJOR"), defines.get(f"{prefix}MINOR"), defines.get(f"{prefix}{patch_name}")]
    if parts[0] is None or parts[1] is None:
        return None
    return ".".join(p for p in parts if p is not None)


def parse_meminfo(text: str) -> tuple[int | None, int | None]:
    """(total, available) bytes from ``/proc/meminfo`` (MemTotal, MemAvailable)."""
    values = {m.group(1): int(m.group(2)) * 1024 for m in _MEMINFO.finditer(text)}
    return values.get("MemTotal"), values.get("MemAvailable")


def parse_docker_runtimes(text: str) -> tuple[str, ...] | None:
    """Runtime names from ``docker info --format '{{json .Runtimes}}'`` ({"nvidia": {...}, "runc": {...}})."""
    lines = text.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return tuple(sorted(data)) if isinstance(data, dict) else None
