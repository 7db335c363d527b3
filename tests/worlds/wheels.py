"""Synthetic ELF files with fat binaries and wheels: the tests' inputs and the benchmark's 1 GiB library.

``fatbin_container`` builds one container (the layout ``fatbin.py`` documents) from (kind, sm)
pairs; ``write_elf`` writes a minimal ELF64 x86-64 shared object whose ``.nv_fatbin`` section is
a given blob repeated any number of times, streaming, so a 1 GiB file costs no memory;
``write_cubin`` writes a bare ``EM_CUDA`` ELF header; ``write_wheel`` packs files into a wheel with
its dist-info. Real fat binaries (from nvcc) can be
replicated the same way: ``read_fatbin_section`` returns a real library's section bytes.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zipfile
from collections.abc import Sequence
from pathlib import Path

from elftools.elf.elffile import ELFFile

from srcbuild.verify.fatbin import FATBIN_MAGIC

_KIND = {"ptx": 1, "sass": 2}
EM_X86_64 = 62
EM_CUDA = 190
SHT_PROGBITS = 1
SHT_STRTAB = 3
SHT_DYNAMIC = 6
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


def _section(
    name: int, type_: int, flags: int, offset: int, size: int, align: int, link: int = 0, entsize: int = 0
) -> bytes:
    return struct.pack("<IIQQQQIIQQ", name, type_, flags, offset, offset, size, link, 0, align, entsize)


def _dynamic(needed: Sequence[str], soname: str | None) -> tuple[bytes, bytes]:
    """(.dynstr, .dynamic) for DT_NEEDED entries and an optional DT_SONAME."""
    strtab = b"\0"
    tags: list[tuple[int, int]] = []
    for tag, name in [(1, n) for n in needed] + ([(14, soname)] if soname else []):
        tags.append((tag, len(strtab)))
        strtab += name.encode() + b"\0"
    tags.append((0, 0))
    return strtab, b"".join(struct.pack("<qQ", t, v) for t, v in tags)


def write_elf(path: Path, fatbin: bytes, repeat: int = 1, needed: Sequence[str] = (), soname: str | None = None) -> int:
    """Write an x86-64 shared object whose ``.nv_fatbin`` is ``fatbin`` ``repeat`` times; return its size.

    ``needed``/``soname`` add a ``.dynamic`` section with DT_NEEDED/DT_SONAME entries.
    """
    names = b"\0.nv_fatbin\0.shstrtab\0.dynstr\0.dynamic\0"
    dynstr, dynamic = _dynamic(needed, soname) if (needed or soname) else (b"", b"")
    data_off = 64
    data_size = len(fatbin) * repeat
    tail = names + dynstr
    tail += bytes(-(data_off + data_size + len(tail)) % 8)
    dyn_off = data_off + data_size + len(tail)
    sh_off = dyn_off + len(dynamic)
    str_off = data_off + data_size
    sections = [
        bytes(64),
        _section(1, SHT_PROGBITS, SHF_ALLOC, data_off, data_size, 8),
        _section(12, SHT_STRTAB, 0, str_off, len(names), 1),
    ]
    if dynamic:
        sections.append(_section(22, SHT_STRTAB, SHF_ALLOC, str_off + len(names), len(dynstr), 1))
        sections.append(_section(30, SHT_DYNAMIC, SHF_ALLOC, dyn_off, len(dynamic), 8, link=3, entsize=16))
    with open(path, "wb") as f:
        f.write(_elf_header(EM_X86_64, 0, sh_off, len(sections), 2))
        for _ in range(repeat):
            f.write(fatbin)
        f.write(tail)
        f.write(dynamic)
        f.write(b"".join(sections))
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


def write_wheel(
    directory: Path,
    distribution: str,
    version: str,
    tag: str,
    files: dict[str, Path | bytes],
) -> Path:
    """A wheel ``<distribution>-<version>-<tag>.whl`` holding ``files`` (member -> path or bytes) and a dist-info."""
    name = distribution.replace("-", "_")
    path = directory / f"{name}-{version}-{tag}.whl"
    info = f"{name}-{version}.dist-info"
    members: dict[str, Path | bytes] = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n".encode()
    members[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: srcbuild-tests\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    )
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, content in members.items():
            data = content.read_bytes() if isinstance(content, Path) else content
            zf.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{member},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path
