"""Measure a wheel: its tags and version, and for each shared library its kernels and links.

``measure_wheel`` reads the wheel's ELF members with ``wheelread.read_wheel`` (each streamed once,
in parallel, in bounded memory, nothing extracted) and reports its shared libraries. It judges
nothing: comparing the measurement with a recipe is ``report.verify_wheel``'s job.

The CUDA version a torch/torchvision wheel was built against is read from two places:
``<package>/version.py`` (torch writes ``cuda = '11.8'`` there at build time,
pytorch/pytorch: tools/generate_torch_version.py; torchvision does the same in its setup.py), and
the ``libcudart.so.*`` its libraries need (see ``elfdeps.cudart_version``).
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, Optional

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from srcbuild.errors import UsageError, VerificationFailed
from srcbuild.records import record
from srcbuild.verify.elfdeps import DynamicInfo
from srcbuild.verify.elfread import ElfFacts
from srcbuild.verify.fatbin import FatbinEntry
from srcbuild.verify.kernels import Kernels, sm_list
from srcbuild.verify.wheelread import MemberHook, Progress, is_library, open_wheel, read_wheel_with

_VERSION_PY_RE = re.compile(r"""^cuda\s*(?::[^=]*)?=\s*(?:['"]([^'"]*)['"]|None)""", re.MULTILINE)

# Called with (member name, a temporary copy, its fat binary entries counted, the (kind, sm) pairs
# found in __nv_relfatbin sections) while the copy exists.
LibraryHook = Callable[[str, Path, "Counter[FatbinEntry]", frozenset], Any]


@record
class LibraryReport:
    """One shared library of a wheel."""

    name: str  # the member path inside the wheel, e.g. torch/lib/libtorch_cuda.so
    kernels: Kernels
    dynamic: DynamicInfo
    size: int = 0
    entries: int = 0  # number of fat binary entries
    ptx_isa: Optional[tuple[int, int]] = None  # newest PTX ISA version among its PTX entries
    extra: Any = None  # what the LibraryHook returned (the cuobjdump cross-check)
    unreadable: Optional[str] = None  # why the file could not be read as ELF (a linker script named .so)
    relfatbin: frozenset[tuple[str, int]] = frozenset()  # (kind, sm) in __nv_relfatbin sections

    @property
    def needed(self) -> tuple[str, ...]:
        return self.dynamic.needed

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size": self.size,
            "sass": sm_list(self.kernels.sass),
            "ptx": sm_list(self.kernels.ptx),
            "ptx_isa": ".".join(map(str, self.ptx_isa)) if self.ptx_isa else None,
            "needed": list(self.dynamic.needed),
            "soname": self.dynamic.soname,
        }


@record
class WheelReport:
    """What a wheel holds, measured without judging it."""

    path: Path
    distribution: str
    version: str  # the full version, e.g. 1.7.1+cu92.sm30
    local: Optional[str]  # the local label, e.g. cu92.sm30, or None
    python_tags: tuple[str, ...]
    abi_tags: tuple[str, ...]
    platform_tags: tuple[str, ...]
    libraries: tuple[LibraryReport, ...] = ()
    cuda_version_py: Optional[str] = None  # cuda = '...' of <package>/version.py; "" when it says None
    version_py: Optional[str] = None  # which member that was read from
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def kernels(self) -> Kernels:
        merged = Kernels()
        for lib in self.libraries:
            merged = merged | lib.kernels
        return merged

    @property
    def ptx_isa(self) -> Optional[tuple[int, int]]:
        versions = [lib.ptx_isa for lib in self.libraries if lib.ptx_isa]
        return max(versions) if versions else None

    @property
    def cudart(self) -> tuple[str, ...]:
        """Every distinct ``libcudart.so.*`` the libraries need."""
        return tuple(sorted({lib.dynamic.cudart for lib in self.libraries if lib.dynamic.cudart}))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "distribution": self.distribution,
            "version": self.version,
            "local": self.local,
            "python_tags": list(self.python_tags),
            "abi_tags": list(self.abi_tags),
            "platform_tags": list(self.platform_tags),
            "kernels": self.kernels.to_json(),
            "cudart": list(self.cudart),
            "cuda_version_py": self.cuda_version_py,
            "libraries": [lib.to_json() for lib in self.libraries],
        }


def _ptx_isa(entries: Counter[FatbinEntry]) -> Optional[tuple[int, int]]:
    versions = [e.version for e in entries if e.kind == "ptx"]
    return max(versions) if versions else None


def _library(name: str, facts: ElfFacts, extra: Any) -> LibraryReport:
    if facts.unreadable:
        return LibraryReport(name, Kernels(), DynamicInfo(), facts.size, unreadable=facts.unreadable)
    return LibraryReport(
        name=name,
        kernels=Kernels.from_entries(facts.entries),
        dynamic=facts.dynamic,
        size=facts.size,
        entries=sum(facts.entries.values()),
        ptx_isa=_ptx_isa(facts.entries),
        extra=extra,
        relfatbin=facts.relfatbin,
    )


def _read_cuda_version(zf: zipfile.ZipFile, distribution: str) -> tuple[str | None, str | None]:
    from srcbuild.errors import CacheIntegrityError
    from srcbuild.limits import MAX_VERSION_PY, read_member

    member = f"{distribution.replace('-', '_')}/version.py"
    try:
        info = zf.getinfo(member)
        data = read_member(zf, info, Path(zf.filename or "wheel").name, MAX_VERSION_PY)
        text = data.decode("utf-8", errors="replace")
    except KeyError:
        return None, None
    except CacheIntegrityError as exc:
        raise VerificationFailed(exc.message, exc.hint) from None
    m = _VERSION_PY_RE.search(text)
    if not m:
        return None, member
    return (m.group(1) or ""), member


def measure_wheel(
    wheel_path: str | Path, library_hook: LibraryHook | None = None, progress: Optional[Progress] = None
) -> WheelReport:
    """Open a wheel and measure every shared library in it (see the module docstring).

    ``library_hook(member, copy, entries, relfatbin)`` runs for each library that holds device code,
    with a temporary copy of it (the cuobjdump cross-check); its result lands in
    ``LibraryReport.extra``. ``progress(member, bytes_read, bytes_in_all)`` follows the reading.
    """
    path = Path(wheel_path)
    try:
        name, version, _build, tags = parse_wheel_filename(path.name)
    except InvalidWheelFilename as exc:
        raise UsageError(f"{path.name}: not a wheel file name ({exc})", "pass a .whl file built by srcbuild") from None
    if not path.is_file():
        raise UsageError(f"{path}: no such wheel", "check the path")
    member_hook: Optional[MemberHook] = None
    if library_hook is not None:
        hook = library_hook

        def member_hook(member: str, copy: Path, facts: ElfFacts) -> Any:
            return hook(member, copy, facts.entries, facts.relfatbin)

    with open_wheel(path) as zf:  # its central directory read once, for the members and version.py
        found, extras = read_wheel_with(path, hook=member_hook, progress=progress, archive=zf)
        cuda_py, version_py = _read_cuda_version(zf, str(name))
    libraries = tuple(_library(m, facts, extras.get(m)) for m, facts in found.items() if is_library(m))
    return WheelReport(
        path=path,
        distribution=str(name),
        version=str(version),
        local=version.local,
        python_tags=tuple(sorted({t.interpreter for t in tags})),
        abi_tags=tuple(sorted({t.abi for t in tags})),
        platform_tags=tuple(sorted({t.platform for t in tags})),
        libraries=libraries,
        cuda_version_py=cuda_py,
        version_py=version_py,
    )
