"""Which CUDA kernels an ELF file carries: a streaming reader of the ``.nv_fatbin`` section.

nvcc embeds device code in a host object, shared library or executable as a *fat binary*: the
``.nv_fatbin`` section holds one or more containers, each a 16-byte header followed by entries;
every entry is SASS (an ``sm_XY`` cubin, kind 2) or PTX (for ``compute_XY``, kind 1). Only the
headers are read, never the payloads, so compressed entries cost nothing and a 1-2 GB
``libtorch_cuda.so`` is scanned in memory bounded by ``CHUNK`` (the ELF section header table is
read by pyelftools; the section itself through a small sliding window, skipping payloads by
seeking).

Layout (little endian), as read by the parser in feasibility.md §2 and checked against cuobjdump
11.8 on objects from nvcc 11.8 and 13.0:

* container header, 16 bytes: ``u32 magic = 0xBA55ED50, u16 version, u16 header_size,
  u64 payload_size``; containers may be separated by zero padding (8-byte aligned).
* entry header, ``header_size`` bytes (64 or more): ``u16 kind, u16 version, u32 header_size,
  u64 padded_payload_size, u32 compressed_size, u32 -, u16 minor, u16 major, u32 sm,
  u32 name_offset, u32 name_size, u64 flags, ...``. For PTX entries (major, minor) is the PTX ISA
  version (7.8 from CUDA 11.8, 9.0 from CUDA 13.0). Flag 0x2000 (nvcc 11.x) or 0x8000 (nvcc 13.x)
  marks a compressed payload (observed on both toolkits).

A bare cubin (ELF machine ``EM_CUDA``) is one SASS entry: its SM is ``e_flags & 0xff`` for ELF
ABI version 7 (CUDA 11.x, feasibility.md §2) and ``(e_flags >> 8) & 0xff`` for ABI version 8
(CUDA 13.0; observed ``0x6005004`` for sm_80).
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Union

from srcbuild.errors import VerificationFailed
from srcbuild.records import record

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
CHUNK = 256 * 1024  # the sliding window: the most the parser holds of the section at once

_KINDS = {1: "ptx", 2: "sass"}
_COMPRESSED_FLAGS = 0x2000 | 0x8000
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHI")  # kind .. sm: the first 32 bytes
_HEADER = struct.Struct("<HHIQIIHHIIIQ")  # kind .. flags: the first 48 bytes

PathOrFile = Union[str, os.PathLike, BinaryIO]


@record
class FatbinEntry:
    """One kernel image in a fat binary: SASS for ``sm`` or PTX for ``compute_<sm>``."""

    kind: str  # "sass" | "ptx"
    sm: int  # 35 for sm_35 / compute_35
    compressed: bool = False
    version: tuple[int, int] = (0, 0)  # PTX ISA version for PTX entries; the cubin ABI for SASS

    def label(self) -> str:
        return f"sm_{self.sm}" if self.kind == "sass" else f"compute_{self.sm}"


class _Window:
    """Reads little pieces of ``[start, end)`` of a file through a bounded buffer."""

    def __init__(self, f: BinaryIO, start: int, end: int, chunk: int = CHUNK) -> None:
        self.f = f
        self.end = end
        self.chunk = chunk
        self.base = start
        self.buf = b""

    def at(self, pos: int, size: int) -> tuple[bytes, int]:
        """A buffer holding ``size`` bytes at absolute ``pos`` (if the range has them) and their offset in it."""
        off = pos - self.base
        if off < 0 or off + size > len(self.buf):
            self.f.seek(pos)
            self.buf = self.f.read(max(self.chunk, size))
            self.base = pos
            off = 0
        return self.buf, off


def _walk(window: _Window, start: int, end: int) -> Iterator[FatbinEntry]:
    made: dict[tuple[int, int, bool, int, int], FatbinEntry] = {}  # one object per distinct entry
    pos = start
    while pos + _CONTAINER.size <= end:
        buf, off = window.at(pos, _CONTAINER.size)
        if len(buf) - off < _CONTAINER.size:
            return
        magic, _version, header_size, payload_size = _CONTAINER.unpack_from(buf, off)
        if magic != FATBIN_MAGIC:
            pos += 8  # padding between containers
            continue
        entry = pos + header_size
        container_end = min(entry + payload_size, end)
        while entry + _ENTRY.size <= container_end:
            buf, off = window.at(entry, _HEADER.size)
            if len(buf) - off >= _HEADER.size:
                kind, _v, entry_header, padded, _c, _x, minor, major, sm, _no, _ns, flags = _HEADER.unpack_from(
                    buf, off
                )
                if entry_header < _HEADER.size:
                    flags = 0
            else:
                kind, _v, entry_header, padded, _c, _x, minor, major, sm = _ENTRY.unpack_from(buf, off)
                flags = 0
            if kind in _KINDS:
                key = (kind, sm, bool(flags & _COMPRESSED_FLAGS), major, minor)
                found = made.get(key)
                if found is None:
                    found = made[key] = FatbinEntry(_KINDS[kind], sm, key[2], (major, minor))
                yield found
            if entry_header == 0:
                break  # a corrupt header would loop forever
            entry += entry_header + padded
        pos = max(container_end, pos + _CONTAINER.size)


def _cubin_sm(elf: ELFFile) -> int:
    flags = int(elf["e_flags"])
    if int(elf["e_ident"]["EI_ABIVERSION"]) >= 8:
        return (flags >> 8) & 0xFF
    return flags & 0xFF


def _iter_file(f: BinaryIO, name: str) -> Iterator[FatbinEntry]:
    from elftools.common.exceptions import ELFError  # pyelftools: only for a seekable file
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(f)
        if elf["e_machine"] == "EM_CUDA":
            yield FatbinEntry("sass", _cubin_sm(elf))
            return
        sections = [
            (int(s["sh_offset"]), int(s["sh_size"]))
            for s in elf.iter_sections()
            if s.name in FATBIN_SECTIONS and s["sh_type"] != "SHT_NOBITS"
        ]
        file_size = f.seek(0, os.SEEK_END)
        for start, size in sections:
            if start < 0 or size < 0 or start + size > file_size:
                raise VerificationFailed(
                    f"{name}: its fat binary section (offset {start}, size {size}) lies outside the "
                    f"file ({file_size} bytes)",
                    "the file is truncated or damaged; rebuild it",
                )
            yield from _walk(_Window(f, start, start + size), start, start + size)
    except (ELFError, struct.error, OverflowError, ValueError, OSError, UnicodeDecodeError, AssertionError) as exc:
        raise VerificationFailed(
            f"{name}: not a readable ELF file ({exc})", "check that the file is a shared library or object"
        ) from None


def iter_entries(source: PathOrFile) -> Iterator[FatbinEntry]:
    """Yield the SASS and PTX entries of an ELF file one by one (memory independent of their number)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        with open(path, "rb") as f:
            yield from _iter_file(f, str(path))
    else:
        yield from _iter_file(source, getattr(source, "name", "<file>"))


def scan_elf(source: PathOrFile) -> list[FatbinEntry]:
    """Every SASS and PTX entry of the fat binaries in an ELF file (a path or a binary file object).

    Returns ``[]`` for an ELF file without device code (a CPU-only ``libtorch_cpu.so``). Raises
    ``VerificationFailed`` when the file is not ELF. The list grows with the number of entries;
    ``count_entries`` keeps only distinct ones.
    """
    return list(iter_entries(source))


def count_entries(source: PathOrFile) -> Counter[FatbinEntry]:
    """How many times each distinct entry occurs: what verification keeps, bounded by distinct archs."""
    return Counter(iter_entries(source))
