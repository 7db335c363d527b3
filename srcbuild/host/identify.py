"""Which GPU a tool's output (or a user) names: PCI id, compute capability, chip code or name, in
that order of trust.

A PCI device id is looked up in ``gpus.toml``; nvidia-smi's ``compute_cap`` is taken as is; an
lspci chip code ("GK107M") gives the capability through ``capabilities.toml`` even for a board
``pci.ids`` does not list; a name is matched by the knowledge base (``knowledge.gpu_names``: word
by word, "NVIDIA H100 80GB HBM3" finds the H100 family, and by prefix when nvidia-smi cut it short,
"NVIDIA GeForce ..."). A name on chips of different capabilities (GTX 860M: GK104 and GM107) keeps
every reading the driver can still run, and asks for ``lspci -nn`` when more than one remains.

The live probe (``srcbuild.host.gpu``) and ``srcbuild recommend`` (``--paste``, ``--lspci``,
``--nvidia-smi``, ``--gpu``, ``--pci-id``) identify GPUs here, from ``srcbuild.host.parsers``'s
``ListedGpu``.
"""

from __future__ import annotations

from collections.abc import Sequence

from srcbuild.capability import ComputeCapability, chip_base, chip_capability
from srcbuild.errors import UsageError
from srcbuild.host.facts import DriverInfo, GpuInfo
from srcbuild.host.parsers import ALL_PARSERS, TRUNCATED, GpuListing, ListedGpu, Parser, read_paste
from srcbuild.knowledge import GpuModel, KnowledgeBase, gpu_names
from srcbuild.records import record

LSPCI_COMMAND = "lspci -nn | grep -i nvidia"
SMI_QUERY_COMMAND = "nvidia-smi --query-gpu=name,pci.device_id,compute_cap,driver_version --format=csv"
# Which parts of a paste to trust first for the GPU itself (the driver comes from any part).
_RANK = ("nvidia-smi --query-gpu csv", "lspci -nn", "lspci", "nvidia-smi -L", "/proc/driver", "nvidia-smi table")


@record
class PasteReading:
    """The GPUs and driver read from a paste, the formats recognised and what to run for more."""

    gpus: tuple[GpuInfo, ...]
    driver: DriverInfo | None
    formats: tuple[str, ...]
    notes: tuple[str, ...]
    rank: int = 0  # how much the part the GPUs come from tells (0: compute capability and PCI id)


def _runnable(kb: KnowledgeBase, models: list[GpuModel], driver: DriverInfo | None) -> list[GpuModel]:
    """The models the driver still supports (an R535 driver means the GTX 860M is not the Kepler one)."""
    if driver is None:
        return models
    kept = []
    for model in models:
        limit = kb.last_driver_for(model.cc)
        if limit.last_branch is None or driver.branch <= limit.last_branch:
            kept.append(model)
    return kept or models


def _candidates(models: list[GpuModel]) -> tuple[str, ...]:
    by_cc: dict[ComputeCapability, list[GpuModel]] = {}
    for model in models:
        by_cc.setdefault(model.cc, []).append(model)
    lines = []
    for cc, group in sorted(by_cc.items()):
        chips = "/".join(dict.fromkeys(m.chip for m in group))
        ids = [label for m in group for label in m.pci_id_labels]
        shown = ", ".join(ids[:4]) + (", ..." if len(ids) > 4 else "")
        lines.append(f"{chips} (compute capability {cc}, pci {shown})")
    return tuple(lines)


def identify(kb: KnowledgeBase, gpu: ListedGpu, source: str, driver: DriverInfo | None) -> GpuInfo:
    """The GPU a listed line names, with its compute capability when the line tells it."""
    name = gpu.name or ""
    if gpu.device_id is not None:
        chip = kb.gpu_by_pci_id(gpu.device_id)
        pci_id = f"10de:{gpu.device_id:04x}"
        if chip is not None:
            display = name or chip.device_name(gpu.device_id) or chip.name
            return GpuInfo(display, chip.cc, source, pci_id=pci_id, chip=chip.name)
        if gpu.cc is None and gpu.chip is None:
            return GpuInfo(name or f"NVIDIA device {pci_id}", None, source, pci_id=pci_id)
    if gpu.cc is not None:
        try:
            return GpuInfo(name or "NVIDIA GPU", ComputeCapability.parse(gpu.cc), source)
        except ValueError:
            pass
    if gpu.chip is not None and chip_capability(gpu.chip) is not None:
        base = chip_base(gpu.chip)
        row = chip_capability(gpu.chip)
        assert row is not None
        ids = sorted(
            f"10de:{device_id:04x}"
            for chip in kb.gpu_chips
            if chip.name == base
            for device_id, product in chip.devices
            if name and gpu_names.is_named(product, name)
        )
        return GpuInfo(
            name or base, ComputeCapability.parse(row.cc), source, pci_id=ids[0] if len(ids) == 1 else None, chip=base
        )
    models = kb.gpus_by_name(name.removesuffix(TRUNCATED), prefix=True) if gpu.truncated else kb.gpus_by_name(name)
    models = _runnable(kb, models, driver)
    ccs = sorted({m.cc for m in models})
    if len(ccs) == 1:
        chips = "/".join(sorted({m.chip for m in models}))
        ids = sorted({i for m in models if gpu_names.is_named(m.name, name) for i in m.pci_id_labels})
        return GpuInfo(name, ccs[0], source, pci_id=ids[0] if len(ids) == 1 else None, chip=chips)
    return GpuInfo(name or "NVIDIA GPU", None, source, candidates=_candidates(models))


def identify_pci(kb: KnowledgeBase, device_id: int, source: str) -> GpuInfo:
    """The GPU of an NVIDIA PCI device id (``recommend --pci-id``)."""
    return identify(kb, ListedGpu(device_id=device_id), source, None)


def identify_name(kb: KnowledgeBase, name: str, source: str) -> GpuInfo:
    """The GPU a user names (``recommend --gpu``): as ``identify``, under the knowledge base's
    name for it when the name fits one product, and with no PCI id (a name does not tell which
    board of a product it is)."""
    info = identify(kb, ListedGpu(name=name), source, None)
    if info.cc is not None:
        names = {m.name for m in kb.gpus_by_name(name)}
        shown = names.pop() if len(names) == 1 else info.name
        return GpuInfo(shown, info.cc, source, chip=info.chip)
    return info


MAX_LISTED_GPUS = 256


def read_gpus(
    kb: KnowledgeBase,
    text: str,
    source: str,
    parsers: tuple[Parser, ...] = ALL_PARSERS,
    what: str = "lspci or nvidia-smi output",
) -> PasteReading:
    """The GPUs and driver of a paste; a paste with nothing recognised (or no NVIDIA GPU) is an error."""
    parts = read_paste(text, parsers)
    driver_text = next((p.driver for p in parts if p.driver), None)
    driver = DriverInfo(driver_text, source) if driver_text else None
    with_gpus = [p for p in parts if p.gpus]
    if not with_gpus:
        hint = f"{LSPCI_COMMAND} | srcbuild recommend --paste -"
        if not parts:
            raise UsageError(f"{source}: no {what} recognised in it", hint)
        formats = ", ".join(p.format for p in parts)
        raise UsageError(f"{source}: the {formats} it holds lists no NVIDIA GPU", hint)
    best = min(with_gpus, key=_rank)
    if len(best.gpus) > MAX_LISTED_GPUS:
        raise UsageError(
            f"{source}: lists {len(best.gpus)} GPUs; a machine has at most a few dozen, so this is not one "
            f"machine's {best.format} (the limit is {MAX_LISTED_GPUS})",
            "paste the output of one machine",
        )
    seen: dict[ListedGpu, GpuInfo] = {}  # identical lines (a box of eight K80s) are identified once
    for listed in best.gpus:
        if listed not in seen:
            seen[listed] = identify(kb, listed, f"{best.format} in {source}", driver)
    gpus = tuple(seen[listed] for listed in best.gpus)
    return PasteReading(gpus, driver, tuple(p.format for p in parts), tuple(_notes(best, gpus)), _rank(best))


def _rank(part: GpuListing) -> int:
    for i, prefix in enumerate(_RANK):
        if (
            part.format == prefix
            or part.format.startswith(prefix + " ")
            or (prefix == "/proc/driver" and part.format.startswith(prefix))
        ):
            return i
    return len(_RANK)


def _notes(part: GpuListing, gpus: Sequence[GpuInfo]) -> list[str]:
    notes = []
    if any(g.truncated for g in part.gpus) and any(g.cc is None for g in gpus):
        cut = next(g.name for g in part.gpus if g.truncated)
        notes.append(f"nvidia-smi cut the GPU name short ({cut!r}); for the full name and id run: {SMI_QUERY_COMMAND}")
    if any(g.cc is None and g.candidates for g in gpus):
        notes.append(f"the name fits GPUs of different compute capabilities; to tell which, run: {LSPCI_COMMAND}")
    elif any(g.cc is None for g in gpus) and not notes:
        notes.append(f"compute capability unknown; run {SMI_QUERY_COMMAND} (drivers >= 510 print compute_cap)")
    return notes
