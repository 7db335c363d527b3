"""CUDA compute capabilities: parsing, validation and the spellings tools use for them.

A compute capability is written ``"3.0"`` in recipes and ``TORCH_CUDA_ARCH_LIST``, ``sm_30`` in
nvcc flags and 30 in a fat binary header. Which capabilities exist, their generation names and
their chip codes are data (``srcbuild/knowledge/data/capabilities.toml``), so a new GPU generation
needs no code change.
"""

from __future__ import annotations

import functools
from functools import total_ordering
from pathlib import Path

from srcbuild import tables
from srcbuild.patterns import LazyPattern
from srcbuild.records import record

# ASCII digits only: int() also reads "３" and "١", which no tool spells a capability with.
_CC_RE = LazyPattern(r"([0-9]{1,2})\.([0-9])")
_SM_RE = LazyPattern(r"(?:sm_|compute_)?([0-9]{1,2})([0-9])")


_PARSED: dict[tuple[type, str, Path], ComputeCapability] = {}  # the knowledge tables parse hundreds


@total_ordering
@record
class ComputeCapability:
    """A compute capability such as 3.5 (major 3, minor 5)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> ComputeCapability:
        """Parse ``"3.5"``; raise ValueError with a readable reason otherwise."""
        key = (cls, text, tables.DATA_DIR)  # a capability is immutable: each text is parsed once
        parsed = _PARSED.get(key)
        if parsed is None:
            parsed = _PARSED[key] = cls._parse(text)
        return parsed

    @classmethod
    def _parse(cls, text: str) -> ComputeCapability:
        m = _CC_RE.fullmatch(text.strip(" "))
        if not m:
            sm = _SM_RE.fullmatch(text.strip(" "))
            if sm:
                raise ValueError(
                    f'{text!r} is not a compute capability; write it as "{int(sm.group(1))}.{sm.group(2)}"'
                )
            raise ValueError(f'{text!r} is not a compute capability (expected a form like "3.5")')
        cc = cls(int(m.group(1)), int(m.group(2)))
        known = known_capabilities()
        if str(cc) not in known:
            raise ValueError(f"{text!r} is not a compute capability any NVIDIA GPU has (known: {', '.join(known)})")
        return cc

    @classmethod
    def from_sm(cls, sm: int) -> ComputeCapability:
        """From the integer form used in fat binaries and ``sm_XY`` (35 -> 3.5, 120 -> 12.0)."""
        return cls(sm // 10, sm % 10)

    @property
    def sm(self) -> int:
        """The integer form: 3.5 -> 35."""
        return self.major * 10 + self.minor

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ComputeCapability):
            return NotImplemented
        return (self.major, self.minor) < (other.major, other.minor)


@record
class CapabilityRow:
    """One compute capability of ``capabilities.toml``: its generation name and its chip codes."""

    cc: str
    generation: str
    chips: tuple[str, ...]
    source: str


def capability_rows() -> tuple[CapabilityRow, ...]:
    """Every compute capability NVIDIA has shipped, from the knowledge data (``capabilities.toml``)."""
    return _rows(tables.DATA_DIR)


@functools.lru_cache(maxsize=4)
def _rows(data_dir: Path) -> tuple[CapabilityRow, ...]:
    data = tables.read_table("capabilities", data_dir)
    return tuple(
        CapabilityRow(str(row["cc"]), str(row["generation"]), tuple(row.get("chips", ())), str(row["source"]))
        for row in data.get("capability", [])
    )


def known_capabilities() -> tuple[str, ...]:
    """``("1.0", "1.1", ..., "12.1")``: the compute capabilities of ``capabilities.toml``."""
    return _known(tables.DATA_DIR)


@functools.lru_cache(maxsize=4)
def _known(data_dir: Path) -> tuple[str, ...]:
    return tuple(row.cc for row in _rows(data_dir))  # once per table: every parse asks (hundreds per doctor)


def generation(cc: ComputeCapability) -> str:
    """The architecture name of a compute capability: 3.5 -> "Kepler", 7.5 -> "Turing"."""
    for row in capability_rows():
        if row.cc == str(cc):
            return row.generation
    return "unknown"


def chip_capability(chip: str) -> CapabilityRow | None:
    """The row whose chip codes name ``chip`` ("GK107M", "GP108GLM" -> the GK107 / GP108 row)."""
    return _chip_rows(capability_rows()).get(chip_base(chip))


@functools.lru_cache(maxsize=4)
def _chip_rows(rows: tuple[CapabilityRow, ...]) -> dict[str, CapabilityRow]:
    return {chip: row for row in rows for chip in row.chips}


_CHIP_RE = LazyPattern(r"^((?:GF|GK|GM|GP|GV|TU|GA|AD|GH|GB|GT|G)\d{2,3}[A-Z]?b?)")
_CHIP_SUFFIX = LazyPattern(r"(?:GLM|GL|BM|M)$")


def chip_base(chip: str) -> str:
    """The chip code without pci.ids' variant suffix: "GK107M" -> "GK107", "GP104BM" -> "GP104"."""
    base = _CHIP_SUFFIX.sub("", chip.strip())
    known = _chip_rows(capability_rows())
    if base in known:
        return base
    m = _CHIP_RE.match(base)
    if m and m.group(1) in known:
        return m.group(1)
    return base
