"""Read one wheel into ``WheelFacts``: what it states about itself, each fact with its evidence.

The libraries' fat binaries come from ``verify.wheel.measure_wheel`` (each member inflated once, as
a stream, in bounded memory). The small text members (``*.dist-info/METADATA``, ``version.py``,
``crt/host_config.h``) are read with ``limits.read_member``'s bound. An nvcc wheel's
``ptxas`` is copied out in 1 MiB pieces to a temporary directory and asked ``--help``: only there
does it list the targets it accepts. The wheel file is hashed once for its sha256.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import field
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import srcbuild.factscan.nvcc as nvcc
from srcbuild.capability import ComputeCapability
from srcbuild.errors import UsageError, VerificationFailed
from srcbuild.packages import PACKAGES
from srcbuild.records import record
from srcbuild.verify.wheel import WheelReport, measure_wheel

COPY_CHUNK = 1 << 20
MAX_TEXT = 1 << 20  # METADATA, version.py, host_config.h: far below a MiB
# nvidia-cuda-nvcc-cu11/-cu12 put the toolkit under nvidia/cuda_nvcc/, nvidia-cuda-nvcc 13.x under nvidia/cu13/
PTXAS_RE = re.compile(r"^nvidia/[A-Za-z0-9_]+/bin/ptxas$")
HOST_CONFIG_RE = re.compile(r"^nvidia/[A-Za-z0-9_]+/include/crt/host_config\.h$")
_CU_SUFFIX_RE = re.compile(r"-cu(\d+)$")
_LOCAL_CU_RE = re.compile(r"""__version__\s*=\s*['"][^'"]*\+cu(\d)(\d+)?(\d)['"]""")


@record
class LibraryKernels:
    """One library's device code: SASS and PTX capabilities."""

    name: str
    sass: tuple[ComputeCapability, ...]
    ptx: tuple[ComputeCapability, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sass": [str(c) for c in self.sass], "ptx": [str(c) for c in self.ptx]}


@record
class WheelFacts:
    """What one upstream wheel states about itself, and how it was read."""

    file: str
    sha256: str
    read_on: str  # the date it was read, YYYY-MM-DD
    project: str  # normalized: torch, torchvision, nvidia-cudnn-cu11, nvidia-cuda-nvcc-cu12, ...
    kind: str  # a package of srcbuild.packages (torch, torchvision, torchaudio) | cudnn | nccl | nvcc | crt | other
    version: str  # without the local label
    local: str | None
    cuda: str | None  # torch/torchvision: version.py; NVIDIA wheels: from the project name ("11", "12")
    python_tags: tuple[str, ...]
    platform_tags: tuple[str, ...]
    requires_python: str | None = None
    requires_torch: str | None = None  # a paired package's Requires-Dist pin, e.g. "==2.14.0" or ">=2.14.0"
    libraries: tuple[LibraryKernels, ...] = ()
    ptxas_targets: tuple[ComputeCapability, ...] = ()
    ptxas_sass: tuple[str, ...] = ()  # "50", "90a", "100f": sm_* as ptxas spells them
    ptxas_ptx: tuple[str, ...] = ()  # the same of compute_*
    ptxas_note: str | None = None  # why the targets were not read (another platform)
    gcc_min: int | None = None
    gcc_max: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def evidence(self) -> str:
        return f"binary: {self.file} sha256:{self.sha256}"

    @property
    def device_libraries(self) -> tuple[LibraryKernels, ...]:
        return tuple(lib for lib in self.libraries if lib.sass)

    @property
    def cuda_tag(self) -> str | None:
        """"cu132" for CUDA 13.2 (the name of PyTorch's per-CUDA index)."""
        if not self.cuda or "." not in self.cuda:
            return None
        major, minor = self.cuda.split(".")[:2]
        return f"cu{major}{minor}"

    def lowest_sass(self) -> ComputeCapability | None:
        """The lowest capability the wheel serves with SASS.

        torch/torchvision: the lowest SASS of the library holding the most kernels (libtorch_cuda.so,
        torchvision's _C.so); the table's official_wheels rows mean that library. cuDNN/NCCL: the
        lowest capability every library with device code carries SASS for (all of them are needed).
        """
        libs = self.device_libraries
        if not libs:
            return None
        if self.kind in PACKAGES:
            main = max(libs, key=lambda lib: len(lib.sass) + len(lib.ptx))
            return min(main.sass)
        return max(min(lib.sass) for lib in libs)

    def to_json(self) -> dict[str, Any]:
        lowest = self.lowest_sass()
        return {
            "file": self.file,
            "sha256": self.sha256,
            "read_on": self.read_on,
            "project": self.project,
            "kind": self.kind,
            "version": self.version,
            "local": self.local,
            "cuda": self.cuda,
            "python_tags": list(self.python_tags),
            "platform_tags": list(self.platform_tags),
            "requires_python": self.requires_python,
            "requires_torch": self.requires_torch,
            "lowest_sass": str(lowest) if lowest else None,
            "libraries": [lib.to_json() for lib in self.device_libraries],
            "ptxas_targets": [str(c) for c in self.ptxas_targets],
            "ptxas_sass": list(self.ptxas_sass),
            "ptxas_ptx": list(self.ptxas_ptx),
            "ptxas_note": self.ptxas_note,
            "gcc_min": self.gcc_min,
            "gcc_max": self.gcc_max,
            "notes": list(self.notes),
        }


def kind_of(project: str) -> str:
    if project in PACKAGES:  # torch, torchvision, torchaudio
        return project
    if project.startswith("nvidia-cudnn-"):
        return "cudnn"
    if project.startswith("nvidia-nccl-"):
        return "nccl"
    if project.startswith("nvidia-cuda-nvcc"):
        return "nvcc"
    if project.startswith("nvidia-cuda-crt"):
        return "crt"  # CUDA 13's crt/host_config.h moved out of the nvcc wheel
    return "other"


def _text(zf: zipfile.ZipFile, member: str, wheel: str) -> str | None:
    from srcbuild.errors import CacheIntegrityError
    from srcbuild.limits import read_member

    try:
        info = zf.getinfo(member)
    except KeyError:
        return None
    try:
        return read_member(zf, info, wheel, MAX_TEXT).decode("utf-8", errors="replace")
    except CacheIntegrityError as exc:
        raise VerificationFailed(exc.message, exc.hint) from None


def _metadata(zf: zipfile.ZipFile, wheel: str) -> tuple[str | None, str | None]:
    """(Requires-Python, the Requires-Dist specifier on torch) of the wheel's METADATA."""
    member = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
    text = _text(zf, member, wheel) if member else None
    if text is None:
        return None, None
    headers = HeaderParser().parsestr(text, headersonly=True)
    torch_pin = None
    for requirement in headers.get_all("Requires-Dist") or []:
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            parsed = Requirement(requirement)
        except InvalidRequirement:
            continue
        if parsed.name == "torch":
            torch_pin = str(parsed.specifier) or None
    return headers.get("Requires-Python"), torch_pin


def _member(zf: zipfile.ZipFile, pattern: re.Pattern[str]) -> str | None:
    return next((name for name in zf.namelist() if pattern.match(name)), None)


def _run_ptxas(zf: zipfile.ZipFile, wheel: str, platforms: tuple[str, ...]) -> tuple[str | None, str | None]:
    """ptxas's ``--help`` text, or why it was not read (a wheel for another machine, or no ptxas)."""
    from srcbuild.errors import CacheIntegrityError
    from srcbuild.limits import check_member
    from srcbuild.proc import probe

    member = _member(zf, PTXAS_RE)
    if member is None:
        return None, "no nvidia/*/bin/ptxas in the wheel"
    info = zf.getinfo(member)
    machine = platform.machine()
    if not any(tag.endswith(machine) for tag in platforms) or platform.system() != "Linux":
        return None, f"ptxas is built for {', '.join(platforms)}; this machine is {platform.system()} {machine}"
    try:
        check_member(info, wheel)
    except CacheIntegrityError as exc:
        raise VerificationFailed(exc.message, exc.hint) from None
    with tempfile.TemporaryDirectory(prefix="srcbuild-scan-") as tmp:
        program = Path(tmp) / "ptxas"
        with zf.open(info) as src, open(program, "wb") as dst:
            shutil.copyfileobj(src, dst, COPY_CHUNK)
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
        text = probe([str(program), "--help"], env={"PATH": os.defpath}, timeout=60)
    if text is None:
        return None, "ptxas --help did not run"
    if not nvcc.ptxas_targets(text):
        return None, "ptxas --help lists no --gpu-name values"
    return text, None


def _cuda_of_local_label(path: Path, member: str | None) -> str | None:
    """torchvision's version.py computes ``cuda`` at run time; its ``__version__`` label says it ("+cu130")."""
    if member is None:
        return None
    with zipfile.ZipFile(path) as zf:
        text = _text(zf, member, path.name) or ""
    match = _LOCAL_CU_RE.search(text)
    if match is None:
        return None
    return f"{match.group(1)}{match.group(2) or ''}.{match.group(3)}"


def scan_wheel(path: Path, read_on: str) -> WheelFacts:
    """Read ``path`` (see the module docstring); ``read_on`` is the date recorded as evidence."""
    from srcbuild.files import sha256_file

    if not path.is_file():
        raise UsageError(f"{path}: no such wheel", "pass a .whl file, or fetch one with --fetch PROJECT==VERSION")
    report: WheelReport = measure_wheel(path)
    project = report.distribution.replace("_", "-").lower()
    kind = kind_of(project)
    libraries = tuple(
        LibraryKernels(lib.name, _ccs(lib.kernels.sass), _ccs(lib.kernels.ptx))
        for lib in report.libraries
    )
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise VerificationFailed(f"{path.name}: not a readable zip archive ({exc})", "fetch the wheel again") from None
    with zf:
        requires_python, requires_torch = _metadata(zf, path.name)
        targets: tuple[ComputeCapability, ...] = ()
        sass: tuple[str, ...] = ()
        ptx: tuple[str, ...] = ()
        ptxas_note = gcc_min = gcc_max = None
        if kind == "nvcc":
            help_text, ptxas_note = _run_ptxas(zf, path.name, report.platform_tags)
            if help_text is not None:
                targets = nvcc.ptxas_targets(help_text)
                sass, ptx = nvcc.ptxas_names(help_text)
        if kind in ("nvcc", "crt"):
            header_member = _member(zf, HOST_CONFIG_RE)
            header = _text(zf, header_member, path.name) if header_member else None
            if header is not None:
                gcc_min, gcc_max = nvcc.gcc_bounds(header)
    cuda = report.cuda_version_py or None
    if cuda is None and kind in PACKAGES:  # torchvision, torchaudio: the local label says it
        cuda = _cuda_of_local_label(path, report.version_py)
    if kind in ("cudnn", "nccl", "nvcc"):
        suffix = _CU_SUFFIX_RE.search(project)
        cuda = suffix.group(1) if suffix else (report.version.split(".")[0] if kind == "nvcc" else None)
    if kind in ("nvcc", "crt"):
        cuda = ".".join(report.version.split(".")[:2])
    version = report.version.split("+")[0]
    return WheelFacts(
        file=path.name,
        sha256=sha256_file(path),
        read_on=read_on,
        project=project,
        kind=kind,
        version=version,
        local=report.local,
        cuda=cuda,
        python_tags=report.python_tags,
        platform_tags=report.platform_tags,
        requires_python=requires_python,
        requires_torch=requires_torch,
        libraries=libraries,
        ptxas_targets=targets,
        ptxas_sass=sass,
        ptxas_ptx=ptx,
        ptxas_note=ptxas_note,
        gcc_min=gcc_min,
        gcc_max=gcc_max,
    )


def _ccs(sms: frozenset[int]) -> tuple[ComputeCapability, ...]:
    return tuple(sorted(ComputeCapability.from_sm(sm) for sm in sms))


def ccs_text(ccs: tuple[ComputeCapability, ...]) -> str:
    return " ".join(str(c) for c in ccs) if ccs else "-"
