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
``version_needs`` reads every version an ELF file asks for (libstdc++'s ``GLIBCXX_``, libgcc_s's
``GCC_`` too): ``verify.manylinux`` decides the platform tag from them.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

from srcbuild.records import record

_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")
ELF_MAGIC = b"\x7fELF"


def version_needs(data: bytes) -> dict[str, set[str]]:
    """Each version one ELF file (its bytes) asks for (``GLIBC_2.27``, ``GLIBCXX_3.4.26``), with the
    imported symbols linked against it; empty for anything else."""
    if not data.startswith(ELF_MAGIC):
        return {}
    from elftools.common.exceptions import ELFError  # pyelftools: symbol by symbol, for naming them
    from elftools.elf.elffile import ELFFile

    needs: dict[str, set[str]] = {}
    try:
        elf = ELFFile(io.BytesIO(data))
        by_index: dict[int, str] = {}  # .gnu.version index -> version name
        for section in elf.iter_sections():
            if section.header["sh_type"] != "SHT_GNU_verneed":
                continue
            for _verneed, auxes in section.iter_versions():  # type: ignore[attr-defined]
                for aux in auxes:
                    by_index[int(aux["vna_other"])] = aux.name
                    needs.setdefault(aux.name, set())
        versym, dynsym = elf.get_section_by_name(".gnu.version"), elf.get_section_by_name(".dynsym")
        if by_index and versym is not None and dynsym is not None:
            for i, symbol in enumerate(dynsym.iter_symbols()):  # type: ignore[attr-defined]
                index = versym.get_symbol(i)["ndx"]  # type: ignore[attr-defined]
                if isinstance(index, int) and (index & 0x7FFF) in by_index and symbol.name:
                    needs[by_index[index & 0x7FFF]].add(symbol.name)
    except (ELFError, ValueError, KeyError, OSError):
        return {}
    return needs


def glibc_pair(version: str) -> tuple[int, int] | None:
    """``GLIBC_2.2.5`` -> (2, 2); None for any other version name."""
    m = _GLIBC.match(version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def glibc_versions(data: bytes) -> set[tuple[int, int]]:
    """The GLIBC_X.Y versions one ELF file (its bytes) asks for; empty for anything else."""
    return {pair for pair in map(glibc_pair, version_needs(data)) if pair is not None}


def symbols_newer_than(data: bytes, floor: tuple[int, int]) -> list[str]:
    """The imported symbols of one ELF file that need a glibc newer than ``floor``, as
    ``name@GLIBC_X.Y`` (sorted); empty for anything else."""
    found: set[str] = set()
    for version, symbols in version_needs(data).items():
        pair = glibc_pair(version)
        if pair is not None and pair > floor:
            found.update(f"{symbol}@{version}" for symbol in symbols)
    return sorted(found)


@record
class ElfLinks:
    """What one ELF file of a wheel imports: versions (with their symbols) and libraries."""

    versions: dict[str, set[str]]
    libraries: tuple[str, ...]


def wheel_links(wheel: Path) -> dict[str, ElfLinks]:
    """``ElfLinks`` of each ELF file of ``wheel``, by member name: the versions come from each
    file's ``.gnu.version_r`` (no symbols listed: ``member_symbols`` names them when a message
    needs them). Read by ``wheelread.read_wheel``: each member streamed once, the answer kept per
    wheel file."""
    from srcbuild.verify.wheelread import read_wheel

    return {
        member: ElfLinks({version: set() for version in facts.versions}, facts.needed)
        for member, facts in read_wheel(wheel).items()
        if facts.elf
    }


def member_symbols(wheel: Path, member: str) -> dict[str, set[str]]:
    """The imported symbols of one ELF member of ``wheel`` by the version each was linked against
    (``version_needs``); reads that member whole, so only for naming symbols in a finding."""
    from srcbuild.errors import CacheIntegrityError
    from srcbuild.limits import read_member

    try:
        with zipfile.ZipFile(wheel) as zf:
            info = zf.getinfo(member)
            return version_needs(read_member(zf, info, wheel.name, info.file_size))
    except (KeyError, OSError, zipfile.BadZipFile, CacheIntegrityError):
        return {}


def wheel_glibc(wheel: Path) -> tuple[int, int] | None:
    """The newest GLIBC_X.Y any ELF file of ``wheel`` asks for; None when none asks for one."""
    pairs = [glibc_pair(version) for links in wheel_links(wheel).values() for version in links.versions]
    return max((pair for pair in pairs if pair is not None), default=None)


# The oldest manylinux_2_Y pip installs for each architecture: glibc 2.5 on x86_64 and i686
# (manylinux1), 2.17 elsewhere (manylinux2014 was the first to name them). pip enumerates its
# accepted tags down to these (pypa/packaging: src/packaging/_manylinux.py, platform_tags,
# ``too_old_glibc2``), so a wheel needing less still gets the oldest tag pip knows.
_OLDEST = {"x86_64": (2, 5), "i686": (2, 5)}
_OLDEST_OTHER = (2, 17)


def oldest_glibc(arch: str) -> tuple[int, int]:
    """The glibc of the oldest ``manylinux_X_Y`` tag pip accepts for ``arch``."""
    return _OLDEST.get(arch, _OLDEST_OTHER)


def manylinux_tag(needed: tuple[int, int] | None, arch: str) -> str:
    """The PEP 600 tag a wheel needing glibc ``needed`` (and nothing else) may carry:
    ``manylinux_2_17_x86_64``; never older than the oldest tag pip accepts for ``arch`` (a wheel
    needing only GLIBC_2.2.5 is ``manylinux_2_5_x86_64``)."""
    major, minor = max(needed or (0, 0), oldest_glibc(arch))
    return f"manylinux_{major}_{minor}_{arch}"


_LINUX_TAG = re.compile(r"^(?:linux|manylinux(?:_\d+_\d+|1|2010|2014))_(\w+)$")


def linux_arch(platform_tags: Iterable[str]) -> str:
    """The architecture of a wheel tagged ``linux_<arch>``, ``manylinux_X_Y_<arch>`` or one of the
    legacy aliases (``manylinux1``, ``manylinux2010``, ``manylinux2014``: PEP 600); empty when no
    tag names a Linux architecture."""
    arches = {m.group(1) for m in map(_LINUX_TAG.match, platform_tags) if m}
    return sorted(arches)[0] if arches else ""


def glibc_text(pair: tuple[int, int] | None) -> str:
    return f"{pair[0]}.{pair[1]}" if pair else ""
