"""What a shared library links: its DT_NEEDED entries and DT_SONAME, read with pyelftools.

Only the dynamic section and its string table are read, so this is cheap on any file size. A wheel's
members are read by ``elfread`` (a stream) instead.
"""

from __future__ import annotations

import re
from typing import BinaryIO

from srcbuild.records import record

_CUDART_RE = re.compile(r"^libcudart\.so\.(\d+)(?:\.(\d+))?$")
_MPI_RE = re.compile(r"^libmpi\.so(?:\.(\d+))?")


@record
class DynamicInfo:
    """The dynamic linking facts of one ELF file."""

    needed: tuple[str, ...] = ()
    soname: str | None = None

    @property
    def cudart(self) -> str | None:
        """The ``libcudart.so.*`` it needs, if any."""
        return next((n for n in self.needed if _CUDART_RE.match(n)), None)

    @property
    def libmpi(self) -> str | None:
        """The ``libmpi.so*`` it needs, if any."""
        return next((n for n in self.needed if _MPI_RE.match(n)), None)


def cudart_version(soname: str) -> tuple[int, int | None] | None:
    """``libcudart.so.9.2`` -> (9, 2); ``libcudart.so.11.0`` -> (11, None); ``libcudart.so.12`` -> (12, None).

    From CUDA 11 on, every minor release ships the runtime under the major's soname (CUDA 11.x:
    ``libcudart.so.11.0``; 12.x: ``libcudart.so.12``; observed on the 11.8 and 13.0 toolkits and in
    NVIDIA's minor-version-compatibility guide,
    https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html), so only
    sonames before 11 name the minor version.
    """
    m = _CUDART_RE.match(soname)
    if not m:
        return None
    major = int(m.group(1))
    minor = int(m.group(2)) if m.group(2) is not None and major < 11 else None
    return major, minor


def libmpi_abi(soname: str) -> int | None:
    """``libmpi.so.40`` -> 40; ``libmpi.so`` -> None."""
    m = _MPI_RE.match(soname)
    return int(m.group(1)) if m and m.group(1) else None


def read_dynamic(f: BinaryIO) -> DynamicInfo:
    """DT_NEEDED and DT_SONAME of an ELF file (empty for a file that is not dynamic ELF)."""
    from elftools.common.exceptions import ELFError  # pyelftools: only for a seekable file
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                needed: list[str] = []
                soname = None
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(str(getattr(tag, "needed")))  # noqa: B009 (set dynamically)
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = str(getattr(tag, "soname"))  # noqa: B009
                return DynamicInfo(tuple(needed), soname)
    except ELFError:
        pass
    return DynamicInfo()
