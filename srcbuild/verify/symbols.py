"""The glibc a wheel needs, read from the symbol versions its ELF files ask for.

A binary linked against glibc records, for every versioned symbol it imports, the version it was
linked with (``.gnu.version_r``: ``memcpy@GLIBC_2.14``). The dynamic loader refuses to run it on
a glibc older than the newest of those versions, so that newest version is what the binary needs
(glibc's symbol versioning; auditwheel computes manylinux tags the same way, and PEP 600 states
the rule: https://peps.python.org/pep-0600/). Only ``GLIBC_X.Y[.Z]`` names count; ``GLIBCXX_``
(libstdc++) and ``CXXABI_`` belong to other libraries.

``symbols_newer_than`` names the imported symbols behind a version (``memfd_create@GLIBC_2.27``):
each dynamic symbol's index in ``.gnu.version`` is the ``vna_other`` of the ``.gnu.version_r``
entry it was linked against (the ELF symbol versioning of the LSB, "Symbol Versioning").
``wheel_platform_tag`` is the tag a wheel's ELF files allow: what ``srcbuild verify`` reports and
what a portable build retags its wheel with. Libraries outside the wheel (CUDA's, the system's)
are not bundled, as the official torch wheels do, so the tag states the C library only.
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


def symbols_newer_than(data: bytes, floor: tuple[int, int]) -> list[str]:
    """The imported symbols of one ELF file that need a glibc newer than ``floor``, as
    ``name@GLIBC_X.Y`` (sorted); empty for anything else."""
    if not data.startswith(ELF_MAGIC):
        return []
    found: set[str] = set()
    try:
        elf = ELFFile(io.BytesIO(data))
        newer: dict[int, str] = {}  # version index -> GLIBC_X.Y
        for section in elf.iter_sections():
            if section.header["sh_type"] != "SHT_GNU_verneed":
                continue
            for _verneed, auxes in section.iter_versions():  # type: ignore[attr-defined]
                for aux in auxes:
                    m = _GLIBC.match(aux.name)
                    if m and (int(m.group(1)), int(m.group(2))) > floor:
                        newer[int(aux["vna_other"])] = aux.name
        versym, dynsym = elf.get_section_by_name(".gnu.version"), elf.get_section_by_name(".dynsym")
        if not newer or versym is None or dynsym is None:
            return []
        for i, symbol in enumerate(dynsym.iter_symbols()):  # type: ignore[attr-defined]
            index = versym.get_symbol(i)["ndx"]  # type: ignore[attr-defined]
            if isinstance(index, int) and (index & 0x7FFF) in newer:
                found.add(f"{symbol.name}@{newer[index & 0x7FFF]}")
    except (ELFError, ValueError, KeyError, OSError):
        return []
    return sorted(found)


def wheel_symbols_newer_than(wheel: Path, floor: tuple[int, int]) -> list[tuple[str, str]]:
    """(member, ``name@GLIBC_X.Y``) for each symbol of ``wheel``'s ELF files newer than ``floor``."""
    out: list[tuple[str, str]] = []
    with zipfile.ZipFile(wheel) as zf:
        for name in _elf_members(zf):
            out += [(name, symbol) for symbol in symbols_newer_than(zf.read(name), floor)]
    return out


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


# The oldest manylinux_2_Y pip installs for each architecture: glibc 2.5 on x86_64 and i686
# (manylinux1), 2.17 elsewhere (manylinux2014 was the first to name them). pip enumerates its
# accepted tags down to these (pypa/packaging: src/packaging/_manylinux.py, platform_tags,
# ``too_old_glibc2``), so a wheel needing less still gets the oldest tag pip knows.
_OLDEST = {"x86_64": (2, 5), "i686": (2, 5)}
_OLDEST_OTHER = (2, 17)


def manylinux_tag(needed: tuple[int, int] | None, arch: str) -> str:
    """The PEP 600 tag a wheel needing glibc ``needed`` may carry: ``manylinux_2_17_x86_64``; never
    older than the oldest tag pip accepts for ``arch`` (a wheel needing only GLIBC_2.2.5 is
    ``manylinux_2_5_x86_64``)."""
    major, minor = max(needed or (0, 0), _OLDEST.get(arch, _OLDEST_OTHER))
    return f"manylinux_{major}_{minor}_{arch}"


def platform_tag_for(needed: tuple[int, int] | None, platform_tags: Iterable[str]) -> str:
    """The ``manylinux_X_Y_<arch>`` tag for a wheel tagged ``linux_<arch>`` (or already manylinux)
    that needs glibc ``needed``; empty when no tag names a Linux architecture."""
    arches = set()
    for tag in platform_tags:
        if tag.startswith("linux_"):
            arches.add(tag[len("linux_") :])
        elif tag.startswith("manylinux_"):
            arches.add(tag.split("_", 3)[3])
    return manylinux_tag(needed, sorted(arches)[0]) if arches else ""


def wheel_platform_tag(wheel: Path) -> str:
    """The ``manylinux_X_Y_<arch>`` tag ``wheel``'s symbol versions allow (see the module docstring)."""
    from packaging.utils import parse_wheel_filename

    return platform_tag_for(wheel_glibc(wheel), {t.platform for t in parse_wheel_filename(wheel.name)[3]})


def glibc_text(pair: tuple[int, int] | None) -> str:
    return f"{pair[0]}.{pair[1]}" if pair else ""
