"""Cross-check the fat binary parser with NVIDIA's ``cuobjdump --list-elf --list-ptx``.

A CUDA 11.8 cuobjdump reads every architecture down to sm_35. Newer ones refuse files with
Kepler code (``cuobjdump fatal   : Support for 'sm_35' has been removed. Please use CUDA toolkit
11.8 or earlier.``, feasibility.md §2), and the 11.8 one cannot read fat binaries written by
CUDA 13 (it reports ``Support for 'sm_4' has been removed``). Such refusals are reported as
"unsupported", never as a mismatch.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

from srcbuild import proc
from srcbuild.records import record
from srcbuild.verify.fatbin import FatbinEntry

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


def cross_check(
    cuobjdump: Path, library: Path, entries: Iterable[FatbinEntry], relfatbin: Iterable[tuple[str, int]] = ()
) -> CrossCheck:
    """Run ``cuobjdump --list-elf --list-ptx library`` and compare with ``entries``."""
    out = proc.probe([str(cuobjdump), "--list-elf", "--list-ptx", str(library)], timeout=600, ok_codes=ALL_EXIT_CODES)
    if out is None:
        return CrossCheck("failed", (), f"{cuobjdump} did not run")
    return compare(out, entries, relfatbin)
