"""CUDA compute capabilities: parsing, validation and the spellings tools use for them.

A compute capability is written ``"3.0"`` in recipes and ``TORCH_CUDA_ARCH_LIST``, ``sm_30`` in
nvcc flags and 30 in a fat binary header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

# Compute capabilities NVIDIA has shipped, from the CUDA GPUs pages
# (https://developer.nvidia.com/cuda-gpus, https://developer.nvidia.com/cuda-legacy-gpus).
KNOWN_CAPABILITIES = (
    "1.0", "1.1", "1.2", "1.3", "2.0", "2.1", "3.0", "3.2", "3.5", "3.7", "5.0", "5.2", "5.3",
    "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.8", "8.9", "9.0",
    "10.0", "10.1", "10.3", "11.0", "12.0", "12.1",
)  # fmt: skip

# ASCII digits only: int() also reads "３" and "١", which no tool spells a capability with.
_CC_RE = re.compile(r"([0-9]{1,2})\.([0-9])")
_SM_RE = re.compile(r"(?:sm_|compute_)?([0-9]{1,2})([0-9])")


@total_ordering
@dataclass(frozen=True)
class ComputeCapability:
    """A compute capability such as 3.5 (major 3, minor 5)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> ComputeCapability:
        """Parse ``"3.5"``; raise ValueError with a readable reason otherwise."""
        m = _CC_RE.fullmatch(text.strip(" "))
        if not m:
            sm = _SM_RE.fullmatch(text.strip(" "))
            if sm:
                raise ValueError(
                    f'{text!r} is not a compute capability; write it as "{int(sm.group(1))}.{sm.group(2)}"'
                )
            raise ValueError(f'{text!r} is not a compute capability (expected a form like "3.5")')
        cc = cls(int(m.group(1)), int(m.group(2)))
        if str(cc) not in KNOWN_CAPABILITIES:
            raise ValueError(
                f"{text!r} is not a compute capability any NVIDIA GPU has (known: {', '.join(KNOWN_CAPABILITIES)})"
            )
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


# Architecture names by compute capability major (and minor where one major spans two).
_GENERATIONS = {
    1: "Tesla",
    2: "Fermi",
    3: "Kepler",
    5: "Maxwell",
    6: "Pascal",
    8: "Ampere",
    9: "Hopper",
    10: "Blackwell",
    11: "Blackwell",
    12: "Blackwell",
}


def generation(cc: ComputeCapability) -> str:
    """The architecture name of a compute capability: 3.5 -> "Kepler", 7.5 -> "Turing"."""
    if cc.major == 7:
        return "Turing" if cc.minor >= 5 else "Volta"
    if cc.major == 8 and cc.minor == 9:
        return "Ada"
    return _GENERATIONS.get(cc.major, "unknown")
