"""Read one ELF file from a forward-only stream: its CUDA kernels, the libraries it links and the
symbol versions it needs, in one pass of bounded memory.

A wheel member is a deflate stream: it can be read front to back once, never seeked. ``ElfStream``
is fed the file's bytes in order and keeps only what it was asked for:

* the ELF header (offset 0) says where the program headers and the section header table are;
* the program headers give the dynamic section (``PT_DYNAMIC``); when its entries arrive, the
  string table and ``.gnu.version_r`` they point to are kept if they are still ahead;
* every fat binary container (magic ``0xBA55ED50``, ``fatbin.py``) met on the way is a candidate:
  its entry headers are read as the stream passes them, payloads never kept;
* at the end, the section header table names the real fat binary sections (``.nv_fatbin``,
  ``__nv_relfatbin``): only candidates that start one, or follow the previous one in it, count,
  exactly as ``fatbin.iter_entries`` walks a seekable file.

The version needs come from ``.gnu.version_r`` alone (each ``Vernaux`` names one version of one
library: ELF symbol versioning, LSB "Symbol Versioning"), not from walking every dynamic symbol.

What lay before the point where the stream learned it was wanted (ld puts ``.dynstr`` and
``.gnu.version_r`` before ``.dynamic``) is listed by ``missing()``: the caller streams the file
again up to the end of those ranges (a few MiB at its start) with ``feed_again``. Memory holds the
chunk being read, the string table and the entry headers: never the file.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import os
import struct
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

from srcbuild.errors import VerificationFailed
from srcbuild.records import record
from srcbuild.verify.elfdeps import DynamicInfo
from srcbuild.verify.fatbin import FATBIN_MAGIC, FatbinEntry

ELF_MAGIC = b"\x7fELF"
CHUNK = 1024 * 1024
MAX_STRTAB = 256 * 1024 * 1024  # a dynamic string table larger than this is not kept (the file is hostile)
MAX_VERNEED = 1024 * 1024
SHSTRTAB_WINDOW = 64 * 1024  # kept before the section header table: .shstrtab lies there

_MAGIC = struct.pack("<I", FATBIN_MAGIC)
_CONTAINER = struct.Struct("<IHHQ")
_HEADER = struct.Struct("<HHIQIIHHIIIQ")  # kind .. flags: 48 bytes
_ENTRY = struct.Struct("<HHIQIIHHI")  # kind .. sm: 32 bytes
_KINDS = {1: "ptx", 2: "sass"}
_COMPRESSED_FLAGS = 0x2000 | 0x8000
_FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
EM_CUDA = 190
PT_LOAD, PT_DYNAMIC = 1, 2
SHN_XINDEX = 0xFFFF  # e_shstrndx: the real index is in section 0's sh_link
SHT_NOBITS, SHT_DYNAMIC, SHT_GNU_VERNEED = 8, 6, 0x6FFFFFFE
DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_VERNEED = 1, 5, 10, 14, 0x6FFFFFFE


@dataclass
class ElfFacts:
    """What one ELF file holds: kernels (counted per distinct entry), links and version needs."""

    entries: Counter[FatbinEntry] = field(default_factory=Counter)
    relfatbin: frozenset[tuple[str, int]] = frozenset()  # (kind, sm) found in __nv_relfatbin sections
    dynamic: DynamicInfo = field(default_factory=DynamicInfo)
    versions: dict[str, set[str]] = field(default_factory=dict)  # version -> symbols (empty: not read)
    size: int = 0
    elf: bool = True
    unreadable: Optional[str] = None  # why it could not be read as ELF

    @property
    def needed(self) -> tuple[str, ...]:
        return self.dynamic.needed


@record
class _Layout:
    cls64: bool
    header: struct.Struct  # e_type .. e_shstrndx after e_ident
    phdr: struct.Struct
    shdr: struct.Struct
    dyn: struct.Struct


_L64 = _Layout(
    True,
    header=struct.Struct("<HHIQQQIHHHHHH"),
    phdr=struct.Struct("<IIQQQQQQ"),
    shdr=struct.Struct("<IIQQQQIIQQ"),
    dyn=struct.Struct("<qQ"),
)
_L32 = _Layout(
    False,
    header=struct.Struct("<HHIIIIIHHHHHH"),
    phdr=struct.Struct("<IIIIIIII"),
    shdr=struct.Struct("<IIIIIIIIII"),
    dyn=struct.Struct("<iI"),
)

class ImpossibleElf(VerificationFailed):
    """An ELF header whose fields no linker writes (exit 6): the file is refused, not skipped."""


Want = tuple[int, int, int, Callable[[bytes], None]]  # (offset, size, sequence, what to do with the bytes)


class ElfStream:
    """Fed one ELF file's bytes in order (``feed``), then ``finish()`` (see the module docstring)."""

    def __init__(self, size: int, name: str = "<file>") -> None:
        self.size = size
        self.name = name
        self.pos = 0
        self._wants: list[Want] = []
        self._seq = 0
        self._partial: dict[int, bytearray] = {}  # sequence -> bytes gathered so far
        self._tail = b""  # the last bytes of the previous chunk: a magic split across chunks
        self._candidates: dict[int, list[tuple[int, FatbinEntry]]] = {}  # container offset -> (entry offset, entry)
        self._container_end: dict[int, int] = {}
        self._made: dict[tuple[int, int, bool, int, int], FatbinEntry] = {}
        self._regions: dict[tuple[int, int], bytes] = {}  # (offset, size) -> bytes kept
        self._missing: list[tuple[int, int]] = []
        self.layout: Optional[_Layout] = None
        self.elf = size >= 4
        self.why = "not a readable ELF file (it is empty)" if size < 4 else "not a readable ELF file"
        self.cubin_sm: Optional[int] = None
        self.shoff = self.shnum = self.shentsize = self.shstrndx = 0
        self._loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
        self._dynamic_at: Optional[tuple[int, int]] = None
        self._data_segments: Optional[list[tuple[int, int]]] = None  # (start, end) of non-code PT_LOADs
        self._skip_until = 0  # the end of the last plausible container: its payloads are not searched
        self._want(0, min(64, size), self._on_header)

    # -- the wants machinery -------------------------------------------------------------------
    def _want(self, offset: int, size: int, then: Callable[[bytes], None]) -> None:
        size = max(0, min(size, self.size - offset))
        if offset < 0 or size == 0:
            return
        if offset < self.pos:
            self._missing.append((offset, size))
            return
        self._seq += 1
        heapq.heappush(self._wants, (offset, size, self._seq, then))

    def _keep(self, offset: int, size: int) -> None:
        """Keep ``[offset, offset + size)`` for ``finish`` (or list it as missing when passed)."""
        size = max(0, min(size, self.size - offset))
        if size and (offset, size) not in self._regions:
            self._want(offset, size, functools.partial(self._regions.__setitem__, (offset, size)))

    def feed(self, chunk: bytes) -> None:
        """The next bytes of the file."""
        start, end = self.pos, self.pos + len(chunk)
        self._serve(chunk, start, end)  # the headers first: they say where to look for containers
        if self.elf:
            self._scan_magic(chunk, start)
            self._serve(chunk, start, end)
        self.pos = end

    def _serve(self, chunk: bytes, start: int, end: int) -> None:
        carried: list[Want] = []
        while self.elf and self._wants and self._wants[0][0] < end:
            want = heapq.heappop(self._wants)
            offset, size, seq, then = want
            have = self._partial.setdefault(seq, bytearray())
            lo, hi = max(offset + len(have), start), min(offset + size, end)
            if lo < hi:
                have += chunk[lo - start : hi - start]
            if len(have) < size:
                carried.append(want)  # continues in the next chunk
                continue
            del self._partial[seq]
            then(bytes(have))
        for want in carried:
            heapq.heappush(self._wants, want)

    def _windows(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of ``[lo, hi)`` where a fat binary may lie: loadable segments (code segments too:
        an older ld maps ``.nv_fatbin`` with the code), or anywhere in a file without program headers
        (an object)."""
        if self._data_segments is None:
            return [(lo, hi)]
        return [(max(lo, a), min(hi, b)) for a, b in self._data_segments if max(lo, a) < min(hi, b)]

    def _scan_magic(self, chunk: bytes, start: int) -> None:
        """Every fat binary container header in ``chunk`` (or begun in the previous one's tail);
        the payloads of a container found are not searched."""
        windows = self._windows(start - len(self._tail), start + len(chunk))
        if not windows:
            self._tail = chunk[-(_CONTAINER.size - 1) :]
            return
        data = self._tail + chunk
        base = start - len(self._tail)
        for lo, hi in windows:
            at = max(lo, self._skip_until) - base
            while at < hi - base:
                at = data.find(_MAGIC, at, hi - base)
                if at < 0:
                    break
                offset = base + at
                if offset not in self._candidates and offset + _CONTAINER.size <= self.size:
                    self._candidates[offset] = []
                    if at + _CONTAINER.size <= len(data):
                        self._on_container(offset, data[at : at + _CONTAINER.size])
                    else:  # the header continues in the next chunk: start the want with what is here
                        self._seq += 1
                        self._partial[self._seq] = bytearray(data[at:])
                        want: Want = (offset, _CONTAINER.size, self._seq, functools.partial(self._on_container, offset))
                        heapq.heappush(self._wants, want)
                at = max(at + 1, self._skip_until - base)
        self._tail = data[-(_CONTAINER.size - 1) :]

    # -- the ELF structures --------------------------------------------------------------------
    def _on_header(self, data: bytes) -> None:
        if len(data) < 52 or not data.startswith(ELF_MAGIC) or data[5] != 1:
            self.elf = False  # not ELF, or big-endian (no wheel platform srcbuild serves)
            self.why = f"not a readable ELF file (it starts with {data[:4]!r})"
            self._wants.clear()
            return
        layout = _L64 if data[4] == 2 else _L32
        if len(data) < 16 + layout.header.size:
            self.elf = False
            return
        self.layout = layout
        (_t, machine, _v, _entry, phoff, shoff, flags, _eh, phentsize, phnum, shentsize, shnum, shstrndx) = (
            layout.header.unpack_from(data, 16)
        )
        self._check_header(layout, phoff, phentsize, phnum, shoff, shentsize, shnum, shstrndx)
        if machine == EM_CUDA:
            self.cubin_sm = (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF
        self.shoff, self.shnum, self.shentsize, self.shstrndx = shoff, shnum, shentsize, shstrndx
        if shoff and shnum and shentsize >= layout.shdr.size:
            self._keep(shoff, shnum * shentsize)
            self._keep(max(0, shoff - SHSTRTAB_WINDOW), min(shoff, SHSTRTAB_WINDOW))
        if phoff and phnum and phentsize >= layout.phdr.size:
            self._want(phoff, phnum * phentsize, lambda d: self._on_phdrs(d, phentsize))

    def _check_header(
        self, layout: _Layout, phoff: int, phentsize: int, phnum: int, shoff: int, shentsize: int, shnum: int,
        shstrndx: int,
    ) -> None:
        """Refuse header fields no linker writes (a table entry smaller than its structure, a table
        outside the file, a section-name index past the table): they are a damaged or hostile file,
        and every later read would trust them."""
        why = None
        if phnum and phentsize < layout.phdr.size:
            why = f"e_phentsize = {phentsize} for {phnum} program headers (each is {layout.phdr.size} bytes)"
        elif phnum and phoff + phnum * phentsize > self.size:
            why = f"its program headers (e_phoff = {phoff}, {phnum} x {phentsize} bytes) end past the file"
        elif shnum and shentsize < layout.shdr.size:
            why = f"e_shentsize = {shentsize} for {shnum} sections (each header is {layout.shdr.size} bytes)"
        elif shnum and shoff + shnum * shentsize > self.size:
            why = f"its section headers (e_shoff = {shoff}, {shnum} x {shentsize} bytes) end past the file"
        elif shnum and shstrndx >= shnum and shstrndx != SHN_XINDEX:
            why = f"e_shstrndx = {shstrndx} names no section (it has {shnum})"
        if why is not None:
            raise ImpossibleElf(
                f"{self.name}: not a valid ELF file: {why} ({self.size} bytes)",
                "the file is damaged or made to mislead readers; rebuild it or fetch it again",
            )

    def _on_phdrs(self, data: bytes, entsize: int) -> None:
        assert self.layout is not None
        for i in range(len(data) // entsize):
            fields = self.layout.phdr.unpack_from(data, i * entsize)
            if self.layout.cls64:
                p_type, _flags, offset, vaddr, _paddr, filesz = fields[:6]
            else:
                p_type, offset, vaddr, _paddr, filesz = fields[:5]
            if p_type == PT_LOAD:
                self._loads.append((vaddr, offset, filesz))
                # Every loadable segment, code too: an older ld puts .rodata and .nv_fatbin in the one
                # R E segment (cuDNN 8.x/9.x for CUDA 11); candidates outside the fat binary sections
                # the section header table names are dropped at the end.
                self._data_segments = [*(self._data_segments or []), (offset, offset + filesz)]
            elif p_type == PT_DYNAMIC and filesz:
                self._dynamic_at = (offset, filesz)
                self._want(offset, filesz, functools.partial(self._on_dynamic, offset))

    def _file_offset(self, vaddr: int) -> Optional[int]:
        for start, offset, filesz in self._loads:
            if start <= vaddr < start + filesz:
                return offset + vaddr - start
        return None

    def _on_dynamic(self, offset: int, data: bytes) -> None:
        """Keep the dynamic section, and the string table and version needs it points to when still
        ahead (not keeping the section itself sent ``missing`` back for it: a second stream of
        385 MiB of torch 2.0.1's libtorch_cpu.so, 5 of its 11 seconds)."""
        self._regions[(offset, len(data))] = data
        tags = self._dynamic_tags(data)
        strtab = self._file_offset(tags.get(DT_STRTAB, [0])[0]) if DT_STRTAB in tags else None
        strsz = tags.get(DT_STRSZ, [0])[0]
        if strtab is not None and 0 < strsz <= MAX_STRTAB and strtab >= self.pos:
            self._keep(strtab, strsz)
        verneed = self._file_offset(tags[DT_VERNEED][0]) if DT_VERNEED in tags else None
        if verneed is not None and verneed >= self.pos:
            self._keep(verneed, MAX_VERNEED)

    def _dynamic_tags(self, data: bytes) -> dict[int, list[int]]:
        assert self.layout is not None
        tags: dict[int, list[int]] = {}
        step = self.layout.dyn.size
        for i in range(len(data) // step):
            tag, value = self.layout.dyn.unpack_from(data, i * step)
            if tag == 0:
                break
            tags.setdefault(tag, []).append(value)
        return tags

    def _on_container(self, offset: int, data: bytes) -> None:
        magic, _version, header_size, payload_size = _CONTAINER.unpack_from(data)
        if magic != FATBIN_MAGIC or header_size < _CONTAINER.size:
            self._candidates.pop(offset, None)
            return
        end = offset + header_size + payload_size
        self._container_end[offset] = end
        if _version == 1 and header_size == _CONTAINER.size and end <= self.size:
            self._skip_until = max(self._skip_until, end)
        self._want(offset + header_size, _HEADER.size, lambda d: self._on_entry(offset, offset + header_size, d))

    def _on_entry(self, container: int, at: int, data: bytes) -> None:
        end = self._container_end[container]
        if at + _ENTRY.size > end or len(data) < _ENTRY.size:
            return
        if len(data) >= _HEADER.size:
            kind, _v, entry_header, padded, _c, _x, minor, major, sm, _no, _ns, flags = _HEADER.unpack_from(data)
            if entry_header < _HEADER.size:
                flags = 0
        else:
            kind, _v, entry_header, padded, _c, _x, minor, major, sm = _ENTRY.unpack_from(data)
            flags = 0
        if kind in _KINDS:
            key = (kind, sm, bool(flags & _COMPRESSED_FLAGS), major, minor)
            found = self._made.get(key)
            if found is None:
                found = self._made[key] = FatbinEntry(_KINDS[kind], sm, key[2], (major, minor))
            self._candidates.setdefault(container, []).append((at, found))
        if entry_header == 0:
            return
        following = at + entry_header + padded
        if following + _ENTRY.size <= end:
            self._want(following, _HEADER.size, lambda d: self._on_entry(container, following, d))

    # -- the end ---------------------------------------------------------------------------------
    def _region(self, offset: int, size: int) -> Optional[bytes]:
        """Bytes ``[offset, offset + size)`` from what was kept, or None."""
        for (start, length), data in self._regions.items():
            if start <= offset and offset + size <= start + length:
                return data[offset - start : offset - start + size]
        return None

    def _sections(self) -> list[tuple[str, int, int, int, int, int]]:
        """(name, type, offset, size, link, info) of each section; names empty when unknown."""
        if self.layout is None or not self.shnum:
            return []
        table = self._region(self.shoff, self.shnum * self.shentsize)
        if table is None:
            return []
        rows = []
        for i in range(self.shnum):
            fields = self.layout.shdr.unpack_from(table, i * self.shentsize)
            name, sh_type, _flags, _addr, offset, size, link, info = fields[:8]
            rows.append((name, sh_type, offset, size, link, info))
        names: Optional[bytes] = None
        if 0 <= self.shstrndx < len(rows):
            _n, _t, offset, size, _l, _i = rows[self.shstrndx]
            names = self._region(offset, size)
        return [(_cstr(names, r[0]) if names else "", *r[1:]) for r in rows]

    def missing(self) -> list[tuple[int, int]]:
        """The ranges ``finish`` needs that the stream had passed before it knew: stream the file
        again from its start up to the end of the last one, through ``feed_again``."""
        wanted = [*self._missing]
        sections = self._sections()
        for _name, sh_type, offset, size, link, _info in sections:
            if sh_type in (SHT_DYNAMIC, SHT_GNU_VERNEED) and size:
                wanted.append((offset, size))
                if 0 <= link < len(sections) and 0 < sections[link][3] <= MAX_STRTAB:
                    wanted.append((sections[link][2], sections[link][3]))
        return sorted({(o, min(s, self.size - o)) for o, s in wanted if self._region(o, s) is None and s > 0})

    def feed_again(self, chunks: Iterable[bytes], ranges: list[tuple[int, int]]) -> None:
        """Keep ``ranges`` from a second stream of the file's start (``missing()``'s answer)."""
        if not ranges:
            return
        stop = max(o + s for o, s in ranges)
        pos = 0
        parts: dict[tuple[int, int], bytearray] = {r: bytearray() for r in ranges}
        for chunk in chunks:
            end = pos + len(chunk)
            for (offset, size), have in parts.items():
                lo, hi = max(offset, pos), min(offset + size, end)
                if lo < hi:
                    have += chunk[lo - pos : hi - pos]
            pos = end
            if pos >= stop:
                break
        for key, have in parts.items():
            if len(have) == key[1]:
                self._regions[key] = bytes(have)

    def finish(self) -> ElfFacts:
        if not self.elf or self.layout is None:
            return ElfFacts(size=self.size, elf=False, unreadable=self.why)
        if self.cubin_sm is not None:
            return ElfFacts(Counter({FatbinEntry("sass", self.cubin_sm): 1}), size=self.size)
        sections = self._sections()
        entries, relfatbin = self._fatbin(sections)
        dynamic, versions = self._links(sections)
        return ElfFacts(entries, relfatbin, dynamic, versions, self.size)

    def _fatbin(self, sections: list[tuple[str, int, int, int, int, int]]) -> tuple[Counter[FatbinEntry], frozenset]:
        counted: Counter[FatbinEntry] = Counter()
        relfat: set[tuple[str, int]] = set()
        starts = sorted(self._container_end)
        for name, sh_type, offset, size, _link, _info in sections:
            if sh_type == SHT_NOBITS or size <= 0:
                continue
            if name not in _FATBIN_SECTIONS and not (not name and offset in self._container_end):
                continue
            if offset + size > self.size:
                raise VerificationFailed(
                    f"{self.name}: its fat binary section (offset {offset}, size {size}) lies outside the "
                    f"file ({self.size} bytes)",
                    "the file is truncated or damaged; rebuild it",
                )
            end = offset + size
            pos = offset
            while pos + _CONTAINER.size <= end:
                i = bisect.bisect_left(starts, pos)
                while i < len(starts) and (starts[i] - pos) % 8:
                    i += 1
                if i == len(starts) or starts[i] + _CONTAINER.size > end:
                    break
                pos = starts[i]
                container_end = min(self._container_end[pos], end)
                for at, entry in self._candidates.get(pos, ()):
                    if at + _ENTRY.size <= container_end:
                        counted[entry] += 1
                        if name == "__nv_relfatbin":
                            relfat.add((entry.kind, entry.sm))
                pos = max(container_end, pos + _CONTAINER.size)
        return counted, frozenset(relfat)

    def _links(self, sections: list[tuple[str, int, int, int, int, int]]) -> tuple[DynamicInfo, dict[str, set[str]]]:
        dyn = next(((o, s, link) for _n, t, o, s, link, _i in sections if t == SHT_DYNAMIC), None)
        strtab: Optional[bytes] = None
        data: Optional[bytes] = None
        if dyn is not None:
            data = self._region(dyn[0], dyn[1])
            if 0 <= dyn[2] < len(sections):
                strtab = self._region(sections[dyn[2]][2], sections[dyn[2]][3])
        elif self._dynamic_at is not None:
            data = self._region(*self._dynamic_at)
        if data is None:
            return DynamicInfo(), {}
        tags = self._dynamic_tags(data)
        if strtab is None and DT_STRTAB in tags:
            offset = self._file_offset(tags[DT_STRTAB][0])
            size = tags.get(DT_STRSZ, [0])[0]
            strtab = self._region(offset, size) if offset is not None else None
        if strtab is None:
            return DynamicInfo(), {}
        needed = tuple(_cstr(strtab, v) for v in tags.get(DT_NEEDED, []))
        soname = _cstr(strtab, tags[DT_SONAME][0]) if DT_SONAME in tags else None
        verneed = next(((o, s) for _n, t, o, s, _l, _i in sections if t == SHT_GNU_VERNEED), None)
        vdata: Optional[bytes] = None
        if verneed is not None:
            vdata = self._region(*verneed)
        elif DT_VERNEED in tags:
            offset = self._file_offset(tags[DT_VERNEED][0])
            if offset is not None:
                vdata = self._region(offset, min(MAX_VERNEED, self.size - offset))
        return DynamicInfo(needed, soname), _verneed(vdata, strtab) if vdata else {}


_VERNEED = struct.Struct("<HHIII")
_VERNAUX = struct.Struct("<IHHII")


def _verneed(data: bytes, strtab: bytes) -> dict[str, set[str]]:
    """Every version name in ``.gnu.version_r`` (``GLIBC_2.17``), with no symbols listed."""
    found: dict[str, set[str]] = {}
    at, seen = 0, 0
    while 0 <= at <= len(data) - _VERNEED.size and seen < 10_000:
        _version, count, _file, aux, following = _VERNEED.unpack_from(data, at)
        where = at + aux
        for _ in range(min(count, 10_000)):
            if not 0 <= where <= len(data) - _VERNAUX.size:
                break
            _hash, _flags, _other, name, next_aux = _VERNAUX.unpack_from(data, where)
            found.setdefault(_cstr(strtab, name), set())
            if not next_aux:
                break
            where += next_aux
        seen += 1
        if not following:
            break
        at += following
    found.pop("", None)
    return found


def _cstr(table: bytes, offset: int) -> str:
    if not 0 <= offset < len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", errors="replace")


def read_stream(
    open_stream: Callable[[], AbstractContextManager[Any]],
    size: int,
    name: str,
    tee: Optional[BinaryIO] = None,
    chunk: int = CHUNK,
) -> ElfFacts:
    """Read one ELF file through ``open_stream()`` (a new stream of it from its start each call):
    once, and again only up to the end of what ``missing()`` lists. ``tee`` gets a copy of every byte."""
    reader = ElfStream(size, name)
    with open_stream() as stream:
        while True:
            data = stream.read(chunk)
            if not data:
                break
            reader.feed(data)
            if tee is not None:
                tee.write(data)
            if not reader.elf and tee is None:
                break
    if reader.elf:
        again = reader.missing()
        if again:
            with open_stream() as stream:
                reader.feed_again(iter(lambda: stream.read(chunk), b""), again)
    facts = reader.finish()
    facts.size = size
    return facts


PathOrFile = Union[str, os.PathLike, BinaryIO]


def read_elf(source: PathOrFile) -> ElfFacts:
    """Kernels, links and version needs of one ELF file (a path, or a seekable binary file)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return read_stream(lambda: open(path, "rb"), path.stat().st_size, str(path))
    start = source.tell()
    size = source.seek(0, os.SEEK_END) - start

    def reopen() -> _Borrowed:
        source.seek(start)
        return _Borrowed(source)

    return read_stream(reopen, size, getattr(source, "name", "<file>"))


class _Borrowed:
    """A caller's file, read as a stream and left open."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f

    def read(self, size: int) -> bytes:
        return self.f.read(size)

    def __enter__(self) -> _Borrowed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
