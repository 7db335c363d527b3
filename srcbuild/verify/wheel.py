"""Measure a wheel: its tags and version, and for each shared library its kernels and links.

``measure_wheel`` opens the wheel (a zip), copies each ``.so`` member to a temporary file in
1 MiB pieces (so memory stays bounded however large the library), scans it with
``fatbin.scan_elf`` and ``elfdeps.read_dynamic``, and deletes it. It judges nothing: comparing the
measurement with a recipe is ``report.verify_wheel``'s job.

The CUDA version a torch/torchvision wheel was built against is read from two places:
``<package>/version.py`` (torch writes ``cuda = '11.8'`` there at build time,
pytorch/pytorch: tools/generate_torch_version.py; torchvision does the same in its setup.py), and
the ``libcudart.so.*`` its libraries need (see ``elfdeps.cudart_version``).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from srcbuild.errors import UsageError, VerificationFailed
from srcbuild.verify.elfdeps import DynamicInfo, read_dynamic
from srcbuild.verify.fatbin import FatbinEntry, count_entries
from srcbuild.verify.kernels import Kernels, sm_list

_SO_RE = re.compile(r"\.so(\.\d+)*$")
_VERSION_PY_RE = re.compile(r"""^cuda\s*(?::[^=]*)?=\s*(?:['"]([^'"]*)['"]|None)""", re.MULTILINE)
COPY_CHUNK = 1024 * 1024

# Called with (member name, extracted path, its fat binary entries counted) while the extracted file exists.
LibraryHook = Callable[[str, Path, "Counter[FatbinEntry]"], Any]


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> None:
    """Copy one member out, refusing a zip bomb first (``cache.limits``); a bad CRC is a clean error."""
    from srcbuild.cache.limits import check_member
    from srcbuild.errors import CacheIntegrityError

    wheel = Path(zf.filename or "wheel").name
    try:
        check_member(info, wheel)
        with zf.open(info) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, COPY_CHUNK)
    except CacheIntegrityError as exc:
        raise VerificationFailed(exc.message, exc.hint) from None
    except (zipfile.BadZipFile, EOFError, NotImplementedError, ValueError) as exc:
        raise VerificationFailed(
            f"{wheel}: member {info.filename} cannot be read ({exc})", "the wheel is damaged; rebuild it"
        ) from None


def _measure_library(zf: zipfile.ZipFile, info: zipfile.ZipInfo, tmp: Path, hook: LibraryHook | None) -> LibraryReport:
    target = tmp / Path(info.filename).name
    _extract(zf, info, target)
    try:
        with open(target, "rb") as f:
            entries = count_entries(f)
            f.seek(0)
            dynamic = read_dynamic(f)
        extra = hook(info.filename, target, entries) if hook is not None and entries else None
    except VerificationFailed as exc:
        reason = exc.message.split(": ", 1)[-1]
        return LibraryReport(info.filename, Kernels(), DynamicInfo(), info.file_size, unreadable=reason)
    finally:
        target.unlink()
    return LibraryReport(
        name=info.filename,
        kernels=Kernels.from_entries(entries),
        dynamic=dynamic,
        size=info.file_size,
        entries=sum(entries.values()),
        ptx_isa=_ptx_isa(entries),
        extra=extra,
    )


def _read_cuda_version(zf: zipfile.ZipFile, distribution: str) -> tuple[str | None, str | None]:
    from srcbuild.cache.limits import MAX_VERSION_PY, read_member
    from srcbuild.errors import CacheIntegrityError

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


def measure_wheel(wheel_path: str | Path, library_hook: LibraryHook | None = None) -> WheelReport:
    """Open a wheel and measure every shared library in it (see the module docstring).

    ``library_hook(member, extracted_path, entries)`` runs for each library that holds device code, while
    its extracted copy exists (used for the cuobjdump cross-check); its result lands in
    ``LibraryReport.extra``.
    """
    path = Path(wheel_path)
    try:
        name, version, _build, tags = parse_wheel_filename(path.name)
    except InvalidWheelFilename as exc:
        raise UsageError(f"{path.name}: not a wheel file name ({exc})", "pass a .whl file built by srcbuild") from None
    if not path.is_file():
        raise UsageError(f"{path}: no such wheel", "check the path")
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise VerificationFailed(f"{path.name}: not a zip archive", "rebuild the wheel; the file is damaged") from None
    with zf, tempfile.TemporaryDirectory(prefix="srcbuild-verify-") as tmp:
        libraries = tuple(
            _measure_library(zf, info, Path(tmp), library_hook)
            for info in zf.infolist()
            if not info.is_dir() and _SO_RE.search(info.filename)
        )
        cuda_py, version_py = _read_cuda_version(zf, str(name))
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
