"""Synthetic ELF files with fat binaries: the benchmark's 1 GiB library and the unit tests' inputs.

``fatbin_container`` builds one container (the layout ``fatbin.py`` documents) from (kind, sm)
pairs; ``write_elf`` writes a minimal ELF64 x86-64 shared object whose ``.nv_fatbin`` section is
a given blob repeated any number of times, streaming, so a 1 GiB file costs no memory;
``write_cubin`` writes a bare ``EM_CUDA`` ELF header. Real fat binaries (from nvcc) can be
replicated the same way: ``read_fatbin_section`` returns a real library's section bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from elftools.elf.elffile import ELFFile

from srcbuild.verify.fatbin import FATBIN_MAGIC

_KIND = {"ptx": 1, "sass": 2}
EM_X86_64 = 62
EM_CUDA = 190
SHT_PROGBITS = 1
SHT_STRTAB = 3
SHF_ALLOC = 2


def fatbin_entry(kind: str, sm: int, payload: int = 64, flags: int = 0x11, version: tuple[int, int] = (1, 7)) -> bytes:
    """One 64-byte entry header followed by ``payload`` zero bytes."""
    major, minor = version
    header = struct.pack("<HHIQIIHHIIIQQQ", _KIND[kind], 0x101, 64, payload, 0, 0, minor, major, sm, 0, 0, flags, 0, 0)
    return header + bytes(payload)


def fatbin_container(entries: Sequence[tuple[str, int]], payload: int = 64, compressed: bool = False) -> bytes:
    """A container of SASS/PTX entries, padded to 16 bytes like nvcc's."""
    flags = 0x11 | (0x2000 if compressed else 0)
    body = b"".join(fatbin_entry(kind, sm, payload, flags, (7, 8) if kind == "ptx" else (1, 7)) for kind, sm in entries)
    blob = struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body
    return blob + bytes(-len(blob) % 16)


def _elf_header(machine: int, flags: int, shoff: int, shnum: int, shstrndx: int, abiversion: int = 0) -> bytes:
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x33 if machine == EM_CUDA else 0, abiversion]) + bytes(7)
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, shoff, flags, 64, 0, 0, 64, shnum, shstrndx)


def _section(name: int, type_: int, flags: int, offset: int, size: int, align: int) -> bytes:
    return struct.pack("<IIQQQQIIQQ", name, type_, flags, offset, offset, size, 0, 0, align, 0)


def write_elf(path: Path, fatbin: bytes, repeat: int = 1) -> int:
    """Write an x86-64 shared object whose ``.nv_fatbin`` is ``fatbin`` ``repeat`` times; return its size."""
    names = b"\0.nv_fatbin\0.shstrtab\0"
    data_off = 64
    data_size = len(fatbin) * repeat
    str_off = data_off + data_size
    sh_off = str_off + len(names) + (-(str_off + len(names)) % 8)
    with open(path, "wb") as f:
        f.write(_elf_header(EM_X86_64, 0, sh_off, 3, 2))
        for _ in range(repeat):
            f.write(fatbin)
        f.write(names)
        f.write(bytes(sh_off - str_off - len(names)))
        f.write(bytes(64))
        f.write(_section(1, SHT_PROGBITS, SHF_ALLOC, data_off, data_size, 8))
        f.write(_section(12, SHT_STRTAB, 0, str_off, len(names), 1))
        return f.tell()


def write_cubin(path: Path, e_flags: int, abiversion: int) -> None:
    """A bare cubin header (no sections): enough for ``scan_elf`` to read its SM."""
    path.write_bytes(_elf_header(EM_CUDA, e_flags, 0, 0, 0, abiversion))


def read_fatbin_section(library: Path) -> bytes:
    """The ``.nv_fatbin`` bytes of a real (small) library, to replicate into a large one."""
    with open(library, "rb") as f:
        section = ELFFile(f).get_section_by_name(".nv_fatbin")
        if section is None:
            raise ValueError(f"{library} has no .nv_fatbin section")
        return bytes(section.data())
