"""The glibc a wheel needs, read from the symbol versions its ELF files ask for.

A binary linked against glibc records, for every versioned symbol it imports, the version it was
linked with (``.gnu.version_r``: ``memcpy@GLIBC_2.14``). The dynamic loader refuses to run it on
a glibc older than the newest of those versions, so that newest version is what the binary needs
(glibc's symbol versioning; auditwheel computes manylinux tags the same way, and PEP 600 states
the rule: https://peps.python.org/pep-0600/). Only ``GLIBC_X.Y[.Z]`` names count; ``GLIBCXX_``
(libstdc++) and ``CXXABI_`` belong to other libraries.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")
ELF_MAGIC = b"\x7fELF"


def glibc_versions(data: bytes) -> set[tuple[int, int]]:
    """The GLIBC_X.Y versions one ELF file (its bytes) asks for; empty for anything else."""
    if not data.startswith(ELF_MAGIC):
        return set()
    found: set[tuple[int, int]] = set()
    try:
        elf = ELFFile(io.BytesIO(data))
        for section in elf.iter_sections():
            if section.header["sh_type"] != "SHT_GNU_verneed":
                continue
            for _verneed, auxes in section.iter_versions():  # type: ignore[attr-defined]
                for aux in auxes:
                    m = _GLIBC.match(aux.name)
                    if m:
                        found.add((int(m.group(1)), int(m.group(2))))
    except (ELFError, ValueError, KeyError, OSError):
        return set()
    return found


def _elf_members(zf: zipfile.ZipFile) -> Iterable[str]:
    for name in zf.namelist():
        base = name.rsplit("/", 1)[-1]
        if base.endswith(".so") or ".so." in base or "/bin/" in name:
            yield name


def wheel_glibc(wheel: Path) -> tuple[int, int] | None:
    """The newest GLIBC_X.Y any ELF file of ``wheel`` asks for; None when none asks for one."""
    newest: tuple[int, int] | None = None
    with zipfile.ZipFile(wheel) as zf:
        for name in _elf_members(zf):
            versions = glibc_versions(zf.read(name))
            if versions:
                newest = max(newest or (0, 0), max(versions))
    return newest


def manylinux_tag(needed: tuple[int, int] | None, arch: str) -> str:
    """The PEP 600 tag a wheel needing glibc ``needed`` may carry: ``manylinux_2_17_x86_64``
    (no versioned glibc symbol at all: the oldest tag pip knows, ``manylinux_2_5``)."""
    major, minor = needed or (2, 5)
    return f"manylinux_{major}_{minor}_{arch}"


def glibc_text(pair: tuple[int, int] | None) -> str:
    return f"{pair[0]}.{pair[1]}" if pair else ""
