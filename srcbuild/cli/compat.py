"""``srcbuild compat --arch 3.0 | --gpu "GT 750M" | --pci-id 10de:0fe9``: the window that works for one GPU.

A name used by GPUs of different compute capabilities gets the window of each and the command
that tells which one is installed; like ``recommend``, that is an answer (exit 0), not an error.

The window and each recipe's verdict are the ones ``recommend`` and ``doctor`` show
(``srcbuild.advice.window`` and ``srcbuild.advice.fit``), for the GPU's newest driver.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console

from srcbuild.advice.fit import RecipeFit, judge_all
from srcbuild.advice.python import PythonToMake, python_to_make
from srcbuild.advice.window import Window, version, window_for
from srcbuild.capability import ComputeCapability
from srcbuild.cli.common import command_environ, json_option, print_json, resolve_paths
from srcbuild.console import make_console, print_lines, show_table, table
from srcbuild.envs.runtime import active_pythons, pythons_here
from srcbuild.errors import RecipeError, UsageError
from srcbuild.knowledge import KnowledgeBase, load_knowledge
from srcbuild.knowledge.model import GpuModel
from srcbuild.recipe import Recipe, RecipeCatalog

NVIDIA_VENDOR = 0x10DE
_PCI_RE = re.compile(r"^(?:(?:0x)?([0-9a-fA-F]{4}):)?(?:0x)?([0-9a-fA-F]{4})\Z")


@click.command("compat")
@click.option("--arch", "arch", metavar="CC", help='A compute capability, e.g. "3.0".')
@click.option("--gpu", "gpu", metavar="NAME", help='A marketing name, e.g. "GT 750M".')
@click.option("--pci-id", "pci_id", metavar="ID", help='An NVIDIA PCI id as `lspci -nn` shows it, e.g. "10de:0fe9".')
@json_option
def compat_command(arch: str | None, gpu: str | None, pci_id: str | None, as_json: bool) -> int:
    """What works for one GPU: CUDA range, gcc per CUDA, newest torch/torchvision, cuDNN, last driver,
    and which catalog recipes fit.

    A name used by GPUs of different compute capabilities (GTX 860M: GK104 or GM107) gets the
    answer for each, and how to tell which one is installed (exit 0, as ``recommend``)."""
    given = [name for name, value in (("--arch", arch), ("--gpu", gpu), ("--pci-id", pci_id)) if value]
    if len(given) != 1:
        raise UsageError("give exactly one of --arch, --gpu and --pci-id", 'e.g. srcbuild compat --gpu "GT 750M"')
    kb = load_knowledge()
    answers: list[tuple[ComputeCapability, str, tuple[str, ...]]]
    if arch:
        try:
            answers = [(ComputeCapability.parse(arch), "", ())]
        except ValueError as exc:
            raise UsageError(f"--arch: {exc}") from exc
    elif pci_id:
        answers = [_from_pci_id(kb, pci_id)]
    else:
        assert gpu is not None
        models = _models_by_name(kb, gpu)
        if models[0].ambiguous:
            return _ambiguous(kb, gpu, models, as_json)
        answers = [_from_models(models)]
    cc, label, ids = answers[0]
    window = window_for(kb, cc)
    fits = judge_all(kb, _catalog(), cc, None, window.last_branch, window.official)
    make = _python_to_make(window)
    if as_json:
        print_json(compat_json(window, fits, label, ids, make))
    else:
        render(window, fits, label, ids, make_console(), make)
    return 0


def _python_to_make(window: Window) -> PythonToMake | None:
    """How to make the Python the official wheel needs, when none on this machine's PATH runs it."""
    environ = command_environ()
    return python_to_make(window.official, pythons_here(environ.get("PATH")), active_pythons(environ))


def compat_json(
    window: Window,
    fits: tuple[RecipeFit, ...],
    gpu: str,
    pci_ids: tuple[str, ...],
    make: PythonToMake | None = None,
) -> dict[str, Any]:
    official = window.official
    return {
        "cc": str(window.cc),
        "generation": window.generation,
        "gpu": gpu,
        "pci_ids": list(pci_ids),
        "knowledge_checked": window.checked or None,
        "knowledge_newest_torch": window.newest_known or None,
        "knowledge_stale": window.stale or None,
        "cuda_first": window.cuda_first or (window.options[0].cuda if window.options else None),
        "cuda_first_source": window.cuda_first_source or None,
        "runtime_caveats": list(window.runtime_caveats),
        "newer_recipe": _newer_recipe_json(fits, official.torch if official else None),
        "cuda": [o.to_json() for o in window.options],
        "newest_torch": window.newest_torch,
        "newest_torchvision": window.newest_torchvision,
        "newest_torch_reported": window.reported_torch,
        "newest_torch_reported_source": window.reported_source or None,
        "official_wheel": f"torch {official.torch} {official.cuda_tag}" if official else None,
        "official": official.to_json() if official else None,
        "make_python": make.to_json() if make else None,
        "last_driver_branch": window.last_branch,
        "last_driver_cuda": window.last_branch_cuda,
        "last_cuda": window.last_cuda,
        "driver_source": window.source,
        "recipes": [
            {
                "name": f.recipe,
                "fits": f.fits,
                "status": f.status,
                "torch": f.torch,
                "cuda": f.cuda,
                "reason": f.reasons[0] if f.reasons else "",
                "reasons": list(f.reasons),
                "notes": list(f.notes),
            }
            for f in fits
        ],
    }


def _catalog() -> list[Recipe]:
    try:
        return RecipeCatalog(resolve_paths()).load_all()
    except RecipeError:
        return []


def _from_pci_id(kb: KnowledgeBase, text: str) -> tuple[ComputeCapability, str, tuple[str, ...]]:
    m = _PCI_RE.match(text.strip())
    if not m:
        raise UsageError(f"--pci-id {text!r} is not a PCI id", 'write it as lspci -nn shows it, e.g. "10de:0fe9"')
    vendor = int(m.group(1), 16) if m.group(1) else NVIDIA_VENDOR
    if vendor != NVIDIA_VENDOR:
        raise UsageError(f"--pci-id {text}: vendor {vendor:04x} is not NVIDIA (10de)")
    device = int(m.group(2), 16)
    chip = kb.gpu_by_pci_id(device)
    if chip is None:
        raise UsageError(
            f"--pci-id {text}: srcbuild does not know NVIDIA device {device:04x}",
            "pass the compute capability with --arch instead (https://developer.nvidia.com/cuda-legacy-gpus)",
        )
    name = chip.device_name(device)
    label = f"{name} ({chip.name})" if name else chip.name
    return chip.cc, label, (f"10de:{device:04x}",)


def _family(name: str) -> list[str]:
    return [word for word in name.upper().split() if word.isalpha()]


def close_gpu_names(name: str, names: Sequence[str]) -> list[str]:
    """Up to three known names close to ``name``, those of its family first ("GTX 1800" finds the
    GTX 1080 before an RTX A1000 whose letters and digits look as close)."""
    family = _family(name)
    kin = {n.upper(): n for n in names if family and _family(n)[-len(family) :] == family}
    close = difflib.get_close_matches(name.upper(), list(kin), n=3, cutoff=0.5)
    return [kin[c] for c in close] or difflib.get_close_matches(name, names, n=3, cutoff=0.5)


def unknown_gpu_error(kb: KnowledgeBase, name: str) -> UsageError:
    """The error ``compat --gpu`` and ``recommend --gpu`` both raise for a name no GPU has (exit 2)."""
    names = sorted({product for chip in kb.gpu_chips for _, product in chip.devices})
    close = close_gpu_names(name, names)
    hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else "use --pci-id or --arch instead"
    return UsageError(f"--gpu {name!r}: no GPU of that name is known", hint)


def _models_by_name(kb: KnowledgeBase, name: str) -> list[GpuModel]:
    models = kb.gpus_by_name(name)
    if not models:
        raise unknown_gpu_error(kb, name)
    return models


def _from_models(models: Sequence[GpuModel]) -> tuple[ComputeCapability, str, tuple[str, ...]]:
    """The capability, label and PCI ids of models of one compute capability."""
    chips = "/".join(dict.fromkeys(m.chip for m in models))
    label = f"{models[0].name} ({chips})" if len(models) > 1 and len({m.name for m in models}) > 1 else models[0].name
    if "(" not in label:
        label = f"{label} ({chips})"
    return models[0].cc, label, tuple(i for m in models for i in m.pci_id_labels)


def _readings(models: Sequence[GpuModel]) -> list[list[GpuModel]]:
    """An ambiguous name's models grouped by compute capability, lowest first."""
    by_cc: dict[ComputeCapability, list[GpuModel]] = {}
    for model in models:
        by_cc.setdefault(model.cc, []).append(model)
    return [by_cc[cc] for cc in sorted(by_cc)]


TELL_WHICH = "`lspci -nn | grep -i nvidia` shows which one you have"


def _ambiguous(kb: KnowledgeBase, name: str, models: Sequence[GpuModel], as_json: bool) -> int:
    """The answer for each GPU an ambiguous name may mean, and how to tell which one is installed."""
    catalog = _catalog()
    answers = []
    for group in _readings(models):
        cc, label, ids = _from_models(group)
        window = window_for(kb, cc)
        fits = judge_all(kb, catalog, cc, None, window.last_branch, window.official)
        answers.append((window, fits, label, ids, _python_to_make(window)))
    choices = " or ".join(
        f"`srcbuild compat --pci-id {m.pci_id_labels[0]}` ({m.chip})" for m in models if m.pci_id_labels
    )
    hint = f"{TELL_WHICH}; then {choices}"
    if as_json:
        print_json(
            {
                "gpu": name,
                "ambiguous": True,
                "candidates": [
                    {"name": m.name, "chip": m.chip, "cc": str(m.cc), "pci_ids": list(m.pci_id_labels)} for m in models
                ],
                "answers": [compat_json(*answer) for answer in answers],
                "hint": hint,
            }
        )
        return 0
    console = make_console()
    ccs = ", ".join(str(window.cc) for window, *_ in answers)
    show_table(
        table(
            f'"{name}" names GPUs of different compute capabilities ({ccs})',
            ("name", "chip", "compute capability", "PCI ids"),
            ((m.name, m.chip, str(m.cc), " ".join(m.pci_id_labels)) for m in models),
        ),
        console,
    )
    for window, fits, label, ids, make in answers:
        console.print()
        console.rule(f"if it is {label}", characters="-")
        render(window, fits, label, ids, console, make)
    console.print()
    print_lines([f"To tell which: {hint}"], console)
    return 0


def render(
    window: Window,
    fits: tuple[RecipeFit, ...],
    gpu: str,
    pci_ids: tuple[str, ...],
    console: Console,
    make: PythonToMake | None = None,
) -> None:
    """The window as text: a headline, the CUDA table, the torch/driver summary and the recipes."""
    head = f"{gpu}: " if gpu else ""
    ids = f" [PCI {' '.join(pci_ids)}]" if pci_ids else ""
    ceiling = window.newest_torch or "none"
    reported = window.reported_torch or "none known"
    print_lines(
        [
            f"{head}compute capability {window.cc} ({window.generation}){ids}",
            f"Newest torch: {ceiling} in theory; {reported} reported to work",
            f"Knowledge last checked: {window.checked or 'unknown'}"
            + (f" (newest torch it knows: {window.newest_known})" if window.newest_known else ""),
            *([f"Warning: {window.stale}"] if window.stale else []),
        ],
        console,
    )
    if not window.options:
        console.print("No CUDA release srcbuild knows can target it.")
        return
    show_table(
        table(
            f"CUDA releases that target sm_{window.cc.sm}",
            ("CUDA", "host gcc", "min driver", "torch lines", "cuDNN"),
            (
                (o.cuda, o.gcc_range, o.min_driver or "not known", _span(o.torch_lines), _span(o.cudnn_lines))
                for o in window.options
            ),
        ),
        console,
    )
    official = window.official
    lines = [
        f"CUDA range: {window.cuda_range}"
        + (
            f" (CUDA before {window.options[0].cuda} is not in srcbuild's tables; source: {window.cuda_first_source})"
            if window.cuda_first
            else ""
        ),
        (
            f"Newest torch: {window.newest_torch} with torchvision {window.newest_torchvision}"
            if window.newest_torch
            else "Newest torch: none srcbuild knows compiles for it"
        ),
        f"Newest torch reported to work: {reported}"
        + (f" ({window.reported_source})" if window.reported_source else ""),
        f"Official wheels with sm_{window.cc.sm} SASS: "
        + (f"torch {official.torch} {official.cuda_tag}" if official else "none"),
    ]
    if official is not None and official.pip:
        lines.append(f"No build needed: {official.pip}")
        lines.extend(f"  caveat: {c}" for c in official.caveats)
        if make is not None:
            lines.extend(f"  {line}" for line in make.lines())
    newer = _newer_recipe(fits, official.torch if official is not None else None)
    if newer is not None:
        lines.append(f"Newer torch {newer.torch}: srcbuild torch --recipe {newer.recipe}")
    lines.extend(f"Caveat: {c}" for c in window.runtime_caveats)
    if window.last_branch:
        lines.append(
            f"Last driver: R{window.last_branch} (runs CUDA ≤ {window.last_branch_cuda} natively); "
            f"last CUDA toolkit: {window.last_cuda}"
        )
    else:
        lines.append("Last driver: current drivers still support it")
    print_lines(lines, console)
    if fits:
        show_table(
            table(
                "Catalog recipes",
                ("recipe", "fits", "torch", "CUDA", "why not"),
                (
                    (f.recipe, "yes" if f.fits else "no", f.torch, f.cuda, f.reasons[0] if f.reasons else "")
                    for f in fits
                ),
            ),
            console,
        )


def _newer_recipe(fits: tuple[RecipeFit, ...], official_torch: str | None) -> RecipeFit | None:
    """The fitting recipe with the newest torch, when it is newer than the official wheel (or there is none)."""
    fitting = sorted((f for f in fits if f.fits and not f.mpi), key=lambda f: version(f.torch), reverse=True)
    if not fitting or (official_torch is not None and version(fitting[0].torch) <= version(official_torch)):
        return None
    return fitting[0]


def _newer_recipe_json(fits: tuple[RecipeFit, ...], official_torch: str | None) -> dict[str, str] | None:
    newer = _newer_recipe(fits, official_torch)
    if newer is None:
        return None
    return {"recipe": newer.recipe, "torch": newer.torch, "command": f"srcbuild torch --recipe {newer.recipe}"}


def _span(items: tuple[str, ...]) -> str:
    if not items:
        return ""
    return items[0] if len(items) == 1 else f"{items[0]}–{items[-1]}"
