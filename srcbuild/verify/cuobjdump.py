"""Cross-check the fat binary parser with NVIDIA's ``cuobjdump --list-elf --list-ptx``.

A CUDA 11.8 cuobjdump reads every architecture down to sm_35. Newer ones refuse files with
Kepler code (``cuobjdump fatal   : Support for 'sm_35' has been removed. Please use CUDA toolkit
11.8 or earlier.``, feasibility.md §2), and the 11.8 one cannot read fat binaries written by
CUDA 13 (it reports ``Support for 'sm_4' has been removed``). Such refusals are reported as
"unsupported", never as a mismatch.

cuobjdump holds about five times what it reads (3.2 GiB for the 0.66 GB ``libtorch_cuda.so`` of
torch 2.0.1+cu117; measured with GNU time's ``%M``), so it is never given a whole library: its
``.nv_fatbin`` section is cut at container boundaries into pieces of at most ``PIECE`` bytes (a
container larger than that alone), each written to a temporary file, listed (cuobjdump reads a
bare fat binary as it reads the library) and deleted before the next; one cuobjdump runs at a time
in the process. The listings together are compared with the parser's entries.
"""

from __future__ import annotations

import re
import shutil
import struct
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Optional

from srcbuild import proc
from srcbuild.records import record
from srcbuild.verify.fatbin import FATBIN_MAGIC, FatbinEntry

PIECE = 12 * 1024 * 1024  # at most this much fat binary per cuobjdump run: about 5x that in memory
_ONE_AT_A_TIME = threading.Lock()  # the wheel's members are read on several threads
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, payload size (fatbin.py)

_LINE_RE = re.compile(r"^(ELF|PTX) file\s+\d+:\s+\S*?\.sm_(\d+)[a-z]?\.(?:cubin|ptx)\s*$", re.MULTILINE)
_FATAL_RE = re.compile(r"^cuobjdump fatal\s*:\s*(.*)$", re.MULTILINE)
ALL_EXIT_CODES = tuple(range(256))


@record
class CrossCheck:
    """cuobjdump's listing of one file compared with ``scan_elf``'s."""

    status: str  # "match" | "mismatch" | "unsupported" | "failed"
    tool_entries: tuple[tuple[str, int], ...] = ()  # (kind, sm), as cuobjdump lists them
    message: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "cuobjdump": [f"{kind}:{sm}" for kind, sm in self.tool_entries],
            "message": self.message,
        }


def find_cuobjdump(cuda_home: Optional[Path] = None) -> Optional[Path]:
    """``<cuda_home>/bin/cuobjdump`` when given and present, else the one on PATH, else None."""
    if cuda_home is not None and (cuda_home / "bin" / "cuobjdump").is_file():
        return cuda_home / "bin" / "cuobjdump"
    found = shutil.which("cuobjdump")
    return Path(found) if found else None


def parse_listing(text: str) -> list[tuple[str, int]]:
    """``ELF file 1: x.1.sm_35.cubin`` -> ("sass", 35); ``PTX file 1: x.1.sm_50.ptx`` -> ("ptx", 50)."""
    return [("sass" if kind == "ELF" else "ptx", int(sm)) for kind, sm in _LINE_RE.findall(text)]


def compare(
    text: str, entries: Iterable[FatbinEntry], relfatbin: Iterable[tuple[str, int]] = ()
) -> CrossCheck:
    """Judge a cuobjdump listing (its whole output) against the parser's entries.

    The two must list the same set of (kind, sm) images; how often each occurs is not compared.
    cuobjdump 11.8 does not list the images of a ``__nv_relfatbin`` section (libcufft.so.10 has
    one beside its ``.nv_fatbin``): images only the parser finds, all in such a section, still match."""
    listed = parse_listing(text)
    fatal = _FATAL_RE.search(text)
    if fatal and "has been removed" in fatal.group(1):
        return CrossCheck("unsupported", tuple(listed), fatal.group(1).strip())
    if fatal:
        return CrossCheck("failed", tuple(listed), fatal.group(1).strip())
    ours = {(e.kind, e.sm) for e in entries}
    tool = set(listed)
    only_tool = sorted(tool - ours)
    only_ours = sorted(ours - tool - set(relfatbin))
    if not only_tool and not only_ours:
        unlisted = sorted(ours - tool)
        note = f"{unlisted} only in __nv_relfatbin, which cuobjdump does not list" if unlisted else ""
        return CrossCheck("match", tuple(listed), note)
    return CrossCheck(
        "mismatch",
        tuple(listed),
        f"only cuobjdump lists {only_tool or 'nothing'}; only the parser finds {only_ours or 'nothing'}",
    )


def fatbin_section(library: Path) -> tuple[int, int] | None:
    """(offset, size) of the library's ``.nv_fatbin`` section; None for a bare cubin, a file
    without one or one pyelftools cannot read (cuobjdump then reads the file itself)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(library, "rb") as f:
            elf = ELFFile(f)
            if elf["e_machine"] == "EM_CUDA":
                return None
            for section in elf.iter_sections():
                if section.name == ".nv_fatbin" and section["sh_type"] != "SHT_NOBITS":
                    return int(section["sh_offset"]), int(section["sh_size"])
    except (ELFError, struct.error, ValueError, OSError, UnicodeDecodeError, AssertionError):
        return None
    return None


def pieces(library: Path, start: int, size: int, limit: int = PIECE) -> Iterator[tuple[int, int]]:
    """(offset, length) runs of whole fat binary containers of the section at ``start``, each at most
    ``limit`` bytes unless one container alone is larger; zero padding between containers is skipped."""
    end = start + size
    first = pos = start
    with open(library, "rb") as f:
        while pos + _CONTAINER.size <= end:
            f.seek(pos)
            magic, _version, header, payload = _CONTAINER.unpack(f.read(_CONTAINER.size))
            if magic != FATBIN_MAGIC:
                if pos == first:
                    first += 8
                pos += 8
                continue
            stop = min(pos + header + payload, end)
            if stop - first > limit and pos > first:
                yield first, pos - first
                first = pos
            pos = stop
    if pos > first:
        yield first, min(pos, end) - first


def _list(cuobjdump: Path, path: Path) -> str | None:
    with _ONE_AT_A_TIME:
        return proc.probe([str(cuobjdump), "--list-elf", "--list-ptx", str(path)], timeout=600, ok_codes=ALL_EXIT_CODES)


def _copy(src: Path, offset: int, length: int, dest: Path) -> None:
    with open(src, "rb") as f, open(dest, "wb") as out:
        f.seek(offset)
        while length > 0:
            block = f.read(min(length, 1 << 20))
            if not block:
                break
            out.write(block)
            length -= len(block)


def cross_check(
    cuobjdump: Path, library: Path, entries: Iterable[FatbinEntry], relfatbin: Iterable[tuple[str, int]] = ()
) -> CrossCheck:
    """List ``library``'s fat binaries with ``cuobjdump --list-elf --list-ptx``, piece by piece (see
    the module docstring), and compare with ``entries``."""
    section = fatbin_section(library)
    if section is None:
        listings = [_list(cuobjdump, library)]
    else:
        listings = _list_pieces(cuobjdump, library, *section)
    if None in listings:
        return CrossCheck("failed", (), f"{cuobjdump} did not run")
    return compare("\n".join(text for text in listings if text), entries, relfatbin)


def _list_pieces(cuobjdump: Path, library: Path, start: int, size: int) -> list[str | None]:
    listings: list[str | None] = []
    with tempfile.TemporaryDirectory(prefix="srcbuild-cuobjdump-") as tmp:
        piece = Path(tmp) / "piece.fatbin"
        for offset, length in pieces(library, start, size, PIECE):
            _copy(library, offset, length, piece)
            out = _list(cuobjdump, piece)
            piece.unlink()
            listings.append(out)
            if out is None or _FATAL_RE.search(out):
                break  # a refusal (Kepler code, a newer format) is the same for every piece
    return listings
