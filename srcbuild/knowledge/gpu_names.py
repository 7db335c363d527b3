"""GPU marketing names: how a name a user types ("GT 750M", "K80") or a tool prints ("NVIDIA
GeForce GTX 1080", cut short "NVIDIA GeForce ...") finds its chips' rows.

``find_gpus`` is the one entry: an exact or loose match of the whole name, else of the name with
its trailing words dropped one by one ("H100 80GB HBM3" finds the H100), or a prefix match for a
name a tool cut short. The vendor word is stripped in one place (``bare_name``), names compare
case-insensitively.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable

from srcbuild.knowledge.model import GpuChip, GpuModel
from srcbuild.patterns import LazyPattern

# words of a marketing name that say nothing about which GPU it is
_FAMILY_WORDS = {"nvidia", "geforce", "tesla", "quadro", "titan", "gtx", "gt", "rtx", "grid", "nvs", "mobile"}


def bare_name(name: str) -> str:
    """The name without its leading "NVIDIA " (any case), as nvidia-smi prints it and pci.ids does not."""
    return name[len("NVIDIA ") :] if name.upper().startswith("NVIDIA ") else name


def find_gpus(chips: Iterable[GpuChip], name: str, prefix: bool = False) -> list[GpuModel]:
    """Models for a marketing name: ``find_by_name``, else ``find_by_words``; with ``prefix`` (a
    name a tool cut short, without its "..."), ``find_by_prefix``."""
    rows = tuple(chips)
    if prefix:
        return find_by_prefix(rows, name)
    return find_by_name(rows, name) or find_by_words(rows, name)


def is_named(product: str, name: str) -> bool:
    """Whether the table's ``product`` name is ``name`` (vendor word and case aside)."""
    return product.lower() == bare_name(name).lower()


def _informative(words: Iterable[str]) -> bool:
    return any(w.lower() not in _FAMILY_WORDS for w in words)


def find_by_words(chips: Iterable[GpuChip], name: str) -> list[GpuModel]:
    """Models for a name, dropping trailing words it has that pci.ids does not ("H100 80GB HBM3" -> "H100")."""
    rows = tuple(chips)
    words = bare_name(name).split()
    while words and _informative(words):
        models = find_by_name(rows, " ".join(words))
        if models:
            return models
        words = words[:-1]
    return []


def find_by_prefix(chips: Iterable[GpuChip], prefix: str) -> list[GpuModel]:
    """Models whose name starts with what nvidia-smi kept of it ("NVIDIA GeForce GTX 10")."""
    bare = bare_name(prefix.rstrip()).lower()
    if not _informative(bare.split()):
        return []
    found: dict[tuple[str, str], GpuModel] = {}
    for chip in chips:
        for device_id, product in chip.devices:
            if product.lower().startswith(bare):
                key = (product, chip.name)
                ids = (*found[key].pci_ids, device_id) if key in found else (device_id,)
                found[key] = GpuModel(product, chip.name, chip.cc, ids, False, chip.source)
    return sorted(found.values(), key=lambda m: (m.cc, m.name))


def find_by_name(chips: Iterable[GpuChip], name: str) -> list[GpuModel]:
    """Models whose marketing name matches ``name`` loosely ("GT 750M" finds "GeForce GT 750M").

    Exact (normalized) names win; otherwise ``name`` may be any run of the name's words, its last
    word a prefix ("GTX 1060" finds "GTX 1060 6GB", "K80" finds "Tesla K80", "K40" finds
    "Tesla K40m"). Each result is one name on one chip; ``ambiguous`` is set on all of them when
    they span more than one compute capability.
    """
    query = _name_key(name)
    if not query:
        return []
    exact: dict[tuple[str, str], list[tuple[int, str, GpuChip]]] = {}
    loose: dict[tuple[str, str], list[tuple[int, str, GpuChip]]] = {}
    for chip in chips:
        for device_id, product in chip.devices:
            key = _name_key(product)
            if key == query:
                tier = exact
            elif _contains_words(key, query):
                tier = loose
            else:
                continue
            tier.setdefault((" ".join(key), chip.name), []).append((device_id, product, chip))
    found = exact or loose
    models = []
    for entries in found.values():
        _, product, chip = entries[0]
        models.append(
            GpuModel(
                name=_display_name(product),
                chip=chip.name,
                cc=chip.cc,
                pci_ids=tuple(sorted(device_id for device_id, _, _ in entries)),
                ambiguous=False,
                source=chip.source,
            )
        )
    ambiguous = len({m.cc for m in models}) > 1
    models = [dataclasses.replace(m, ambiguous=ambiguous) for m in models]
    return sorted(models, key=lambda m: (m.cc, m.name, m.pci_ids))


def _contains_words(words: tuple[str, ...], query: tuple[str, ...]) -> bool:
    """Whether ``query`` is a run of ``words``, its last word possibly a prefix up to letters ("40" of "40m")."""
    n = len(query)
    for i in range(len(words) - n + 1):
        run = words[i : i + n]
        rest = run[-1][len(query[-1]) :]
        if run[:-1] == query[:-1] and run[-1].startswith(query[-1]) and (not rest or rest.isalpha()):
            return True
    return False


_QUALIFIERS = LazyPattern(r"\b(mac edition|oem|rev\. ?\d+|fake|engineering sample)\b")


@functools.lru_cache(maxsize=8192)  # every product's key is asked for on every lookup
def _name_key(name: str) -> tuple[str, ...]:
    """Words of a marketing name without vendor and variant qualifiers: "GeForce GT 750M Mac Edition" -> (gt, 750m)."""
    text = bare_name(name).lower().replace("geforce", " ")
    text = _QUALIFIERS.sub(" ", text)
    return tuple(re.findall(r"[a-z]+|[0-9]+[a-z]*", text))


def _display_name(product: str) -> str:
    """The product name without variant qualifiers: "GeForce GT 750M Mac Edition" -> "GeForce GT 750M"."""
    return re.sub(r"\s+", " ", re.sub(r"(?i)\b(mac edition|oem|rev\. ?\d+)", "", product)).strip()
