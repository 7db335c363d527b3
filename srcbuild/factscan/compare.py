"""Compare what a wheel states with the shipped tables: agreements, contradictions, and what no
shipped row covers.

Per kind:
- torch: the row of its release must list its CUDA tag in ``official_wheels`` with the lowest SASS
  capability it carries, and its Python tag must lie in ``python_min``..``python_max``.
- torchvision: every torch release the table pairs it with must satisfy its ``Requires-Dist: torch``
  pin, and an exact pin (``==2.14.0``) must be paired with it.
- cuDNN: ``lowest_cc`` for its CUDA major must be the lowest capability all its libraries carry SASS
  for.
- nvcc: the CUDA row's ``sass`` / ``ptx`` sets must be the ``sm_*`` / ``compute_*`` targets ptxas
  accepts, ``max_gcc`` (and ``min_gcc``, where the header states one) the bounds of ``host_config.h``
  (a CUDA 13 ``nvidia-cuda-crt`` wheel states only the gcc bounds).
- NCCL: no shipped table holds its facts; they are printed, not compared.
"""

from __future__ import annotations

from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild.factscan.read import WheelFacts
from srcbuild.knowledge import KnowledgeBase
from srcbuild.knowledge import versions as kversions
from srcbuild.packages import PACKAGES
from srcbuild.records import record

AGREES, CONTRADICTS, UNCOVERED = "agrees", "contradicts", "not covered"


@record
class Comparison:
    """One shipped fact held against what the wheel states."""

    file: str
    table: str  # torch.toml, cudnn.toml, cuda.toml
    row: str  # "torch 2.15", "cudnn 9.11", "cuda 12.9"
    fact: str  # "official_wheels.cu132", "lowest_cc.12", ...
    status: str  # agrees | contradicts | not covered
    shipped: str | None
    binary: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "table": self.table,
            "row": self.row,
            "fact": self.fact,
            "status": self.status,
            "shipped": self.shipped,
            "binary": self.binary,
        }

    def line(self) -> str:
        shipped = self.shipped or "nothing"
        return f"{self.status}: {self.table} {self.row} {self.fact}: shipped {shipped}, binary {self.binary}"


def _cmp(facts: WheelFacts, table: str, row: str, fact: str, shipped: object, binary: object) -> Comparison:
    shipped_text = None if shipped is None else str(shipped)
    binary_text = None if binary is None else str(binary)
    if shipped_text is None:
        status = UNCOVERED
    else:
        status = AGREES if shipped_text == binary_text else CONTRADICTS
    return Comparison(facts.file, table, row, fact, status, shipped_text, binary_text)


def _python_version(tag: str) -> str | None:
    """"cp311" -> "3.11"; None for "py3" (any Python)."""
    digits = tag[2:].rstrip("t")
    if not tag.startswith("cp") or len(digits) < 2 or not digits.isdigit():
        return None
    return f"{digits[0]}.{digits[1:]}"


def _torch(kb: KnowledgeBase, facts: WheelFacts) -> list[Comparison]:
    release = kb.torch(facts.version)
    row = f"torch {kversions.show(kversions.line(kversions.parse(facts.version)))}"
    lowest = facts.lowest_sass()
    out: list[Comparison] = []
    if lowest is not None and facts.cuda_tag:
        shipped = release.wheels.get(facts.cuda_tag) if release is not None else None
        out.append(_cmp(facts, "torch.toml", row, f"official_wheels.{facts.cuda_tag}", shipped, lowest))
    for tag in facts.python_tags:
        python = _python_version(tag)
        if python is None:
            continue
        if release is None:
            out.append(_cmp(facts, "torch.toml", row, "python", None, python))
            continue
        inside = kversions.at_least(kversions.parse(python), kversions.parse(release.python_min)) and kversions.at_most(
            kversions.parse(python), kversions.parse(release.python_max)
        )
        span = f"{release.python_min} to {release.python_max}"
        out.append(_cmp(facts, "torch.toml", row, "python_min..python_max", span, span if inside else f"{python}"))
    return out


def _paired(kb: KnowledgeBase, facts: WheelFacts) -> list[Comparison]:
    """A package built against torch (torchvision, torchaudio): the torch its table pairs it with
    against its ``Requires-Dist: torch``."""
    package = facts.kind
    paired = kb.torch_for_package(package, facts.version)
    pin = facts.requires_torch
    row = f"{package} {facts.version}"
    if pin is None:
        return [_cmp(facts, "torch.toml", row, package, paired, "no Requires-Dist on torch")]
    try:
        spec = SpecifierSet(pin)
    except InvalidSpecifier:
        return [_cmp(facts, "torch.toml", row, package, paired, f"torch{pin} (unreadable)")]
    pairs = [torch for torch in _torch_releases(kb) if facts.version in kb.paired_for(package, torch)]
    if not pairs:
        return [_cmp(facts, "torch.toml", row, "torch paired with it", None, f"torch{pin}")]
    out = []
    for torch in pairs:
        try:
            allowed = Version(torch) in spec
        except InvalidVersion:
            allowed = False
        out.append(_cmp(facts, "torch.toml", row, "torch paired with it", torch, torch if allowed else f"torch{pin}"))
    exact = [s.version for s in spec if s.operator == "=="]
    for torch in exact:
        if torch not in pairs:
            out.append(_cmp(facts, "torch.toml", row, "torch paired with it", ", ".join(pairs), torch))
    return out


def _torch_releases(kb: KnowledgeBase) -> list[str]:
    return [version for row in kb.torch_releases for version, _ in row.torchvision_map]


def _cudnn(kb: KnowledgeBase, facts: WheelFacts) -> list[Comparison]:
    lowest = facts.lowest_sass()
    parts = facts.version.split(".")
    row_version = ".".join(parts[:2])
    release = kb.cudnn(row_version)
    if lowest is None or facts.cuda is None:
        return []
    shipped = release.lowest_cc_for(f"{facts.cuda}.0") if release is not None else None
    row = f"cudnn {release.version if release else row_version}"
    return [_cmp(facts, "cudnn.toml", row, f"lowest_cc.{facts.cuda}", shipped, lowest)]


def _nvcc(kb: KnowledgeBase, facts: WheelFacts) -> list[Comparison]:
    if facts.cuda is None:
        return []
    release = kb.cuda(facts.version)
    row = f"cuda {facts.cuda}"
    out: list[Comparison] = []
    if facts.ptxas_sass:
        for fact, shipped, binary in (
            ("sass", release.targets.sass if release else None, facts.ptxas_sass),
            ("ptx", release.targets.ptx if release else None, facts.ptxas_ptx),
        ):
            out.append(_cmp(facts, "cuda.toml", row, fact, " ".join(shipped) if shipped else None, " ".join(binary)))
    if facts.gcc_max is not None:
        out.append(_cmp(facts, "cuda.toml", row, "max_gcc", release.max_gcc if release else None, facts.gcc_max))
    if facts.gcc_min is not None:
        out.append(_cmp(facts, "cuda.toml", row, "min_gcc", release.min_gcc if release else None, facts.gcc_min))
    return out


def check(kb: KnowledgeBase, facts: WheelFacts) -> list[Comparison]:
    """Every shipped fact the wheel speaks to, held against it (see the module docstring)."""
    by_kind = {"torch": _torch, "cudnn": _cudnn, "nvcc": _nvcc, "crt": _nvcc}
    compare = by_kind.get(facts.kind) or (_paired if facts.kind in PACKAGES else None)
    return compare(kb, facts) if compare is not None else []
