"""Judge a measured wheel against a recipe: kernels per compute capability, MPI, tags, CUDA, version.

``verify_wheel`` measures the wheel (``wheel.measure_wheel``) and returns a ``VerifyReport``: every
finding at once, the per-library kernel table and one coverage row per requested compute
capability. ``ok`` is False when any finding is an error; the caller (``srcbuild verify``, the
build) turns that into ``VerificationFailed`` (exit 6) and does not cache the wheel.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Optional

from srcbuild.capability import ComputeCapability
from srcbuild.findings import Finding, Severity, has_errors
from srcbuild.recipe import Recipe
from srcbuild.records import record
from srcbuild.verify.checks import check_abi, check_cuda_runtime, check_mpi
from srcbuild.verify.cuobjdump import CrossCheck, cross_check
from srcbuild.verify.fatbin import FatbinEntry
from srcbuild.verify.kernels import Coverage, Kernels, coverage, runs_on, sm_list
from srcbuild.verify.mpi import HostMpi, probe_host_mpi
from srcbuild.verify.wheel import LibraryHook, WheelReport, measure_wheel
from srcbuild.verify.wheelread import Progress

TORCH_ARCH_SOURCE = (
    "pytorch/pytorch: cmake/Modules_CUDA_fix/upstream/FindCUDA/select_compute_arch.cmake "
    "(TORCH_CUDA_ARCH_LIST: X.Y, X.Y+PTX)"
)
CUOBJDUMP_SOURCE = "cuobjdump --list-elf --list-ptx: https://docs.nvidia.com/cuda/cuda-binary-utilities/"
KERNEL_RULE_SOURCE = (
    "CUDA C++ Programming Guide, 'Binary Compatibility' (SASS for X.y runs on X.z, z >= y) and "
    "'PTX Compatibility' (PTX for X.Y is JIT-compiled on any cc >= X.Y)"
)


@record
class VerifyReport:
    """The verdict on one wheel: findings, kernel table and coverage rows."""

    wheel: WheelReport
    findings: tuple[Finding, ...]
    coverage: tuple[Coverage, ...] = ()
    recipe: Optional[str] = None
    host_mpi: Optional[HostMpi] = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    @property
    def kernels(self) -> Kernels:
        return self.wheel.kernels

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    def table_rows(self) -> list[dict[str, Any]]:
        """One row per library that holds device code: library, SASS, PTX (and the cross-check)."""
        rows = []
        for lib in self.wheel.libraries:
            if lib.kernels.empty:
                continue
            row: dict[str, Any] = {
                "library": lib.name,
                "sass": sm_list(lib.kernels.sass),
                "ptx": sm_list(lib.kernels.ptx),
            }
            if isinstance(lib.extra, CrossCheck):
                row["cuobjdump"] = lib.extra.status
            rows.append(row)
        return rows

    def runs_on_rows(self) -> list[list[ComputeCapability]]:
        """For each row of ``table_rows``: the compute capabilities (3.0 on) that can run it."""
        return [
            [c.cc for c in runs_on(lib.kernels, lib.ptx_isa)] for lib in self.wheel.libraries if not lib.kernels.empty
        ]

    def coverage_rows(self) -> list[dict[str, Any]]:
        return [{"cc": str(c.cc), "runs": c.runs, "via": c.via} for c in self.coverage]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "wheel": self.wheel.path.name,
            "recipe": self.recipe,
            "version": self.wheel.version,
            "tags": {
                "python": list(self.wheel.python_tags),
                "abi": list(self.wheel.abi_tags),
                "platform": list(self.wheel.platform_tags),
            },
            "kernels": self.kernels.to_json(),
            "runs_on": [str(c.cc) for c in runs_on(self.kernels, self.wheel.ptx_isa)],
            "has_cuda": not self.kernels.empty,
            "coverage": self.coverage_rows(),
            "libraries": [
                {**row, "runs_on": [str(cc) for cc in ccs]} for row, ccs in zip(self.table_rows(), self.runs_on_rows())
            ],
            "cudart": list(self.wheel.cudart),
            "cuda_version_py": self.wheel.cuda_version_py,
            "host_mpi": (
                {"implementation": self.host_mpi.implementation, "version": self.host_mpi.version}
                if self.host_mpi
                else None
            ),
            "findings": [f.to_json() for f in self.findings],
            "glibc_needed": self.extra.get("glibc_needed", ""),
            "manylinux": self.extra.get("manylinux", ""),
            "manylinux_held_back_by": self.extra.get("manylinux_held_back_by", []),
            "manylinux_unbundled": self.extra.get("manylinux_unbundled", []),
        }


def no_kernels_text(libraries: int) -> str:
    """``none of its 3 shared libraries holds a CUDA kernel`` (read from each one's fat binaries)."""
    if libraries == 0:
        return "it holds no shared library"
    if libraries == 1:
        return "its one shared library holds no CUDA kernel"
    return f"none of its {libraries} shared libraries holds a CUDA kernel"


def check_kernels(wheel: WheelReport, archs: Sequence[ComputeCapability]) -> tuple[list[Coverage], list[Finding]]:
    """One coverage row per compute capability; an error for each that has no image."""
    kernels = wheel.kernels
    rows: list[Coverage] = []
    findings: list[Finding] = []
    if archs and kernels.empty:
        wanted = ", ".join(str(cc) for cc in sorted(set(archs)))
        rows = [coverage(kernels, cc) for cc in sorted(set(archs))]
        return rows, [
            Finding(
                rule="no-cuda",
                severity=Severity.ERROR,
                message=f"this wheel has no CUDA: {no_kernels_text(len(wheel.libraries))}, so no GPU runs it "
                f"(asked: {wanted})",
                fix="install a CUDA build of it (a +cuXY wheel), or build one with a recipe whose gpu.arch "
                f"includes {wanted}",
                field="gpu.arch",
            )
        ]
    for cc in sorted(set(archs)):
        row = coverage(kernels, cc, wheel.ptx_isa)
        rows.append(row)
        if not row.runs:
            sass = f"SASS for {', '.join(sm_list(kernels.sass))}" if kernels.sass else "no SASS"
            findings.append(
                Finding(
                    rule="kernel-image",
                    severity=Severity.ERROR,
                    message=f"no kernel image for compute capability {cc}: the wheel has {sass} and no PTX ≤ {cc}",
                    source=KERNEL_RULE_SOURCE,
                    fix=f"rebuild with gpu.arch including {cc}",
                    field="gpu.arch",
                )
            )
        elif row.caveat:
            findings.append(
                Finding(
                    rule="kernel-ptx-kepler",
                    severity=Severity.WARNING,
                    message=row.caveat,
                    source="https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html",
                    fix=f"add {cc} to gpu.arch so the wheel carries SASS for it",
                    field="gpu.arch",
                )
            )
    return rows, findings


def check_recipe_kernels(wheel: WheelReport, recipe: Recipe) -> list[Finding]:
    """What ``TORCH_CUDA_ARCH_LIST`` asked for is there: SASS per ``gpu.arch``, PTX for the highest with ``ptx``.

    Missing pieces that another image still covers are warnings (the GPU runs, but not as built).
    """
    if recipe.toolchain.cuda is None or not recipe.gpu.arch:
        return []
    kernels = wheel.kernels
    findings = []
    missing = [cc for cc in sorted(recipe.gpu.arch) if cc.sm not in kernels.sass]
    covered = [cc for cc in missing if coverage(kernels, cc).runs]
    if covered:
        findings.append(
            Finding(
                "kernel-sass-missing",
                Severity.WARNING,
                f"gpu.arch asks for SASS for {', '.join(map(str, covered))} but the wheel has "
                + (f"SASS only for {', '.join(sm_list(kernels.sass))}" if kernels.sass else "no SASS")
                + "; those GPUs fall back to another image",
                TORCH_ARCH_SOURCE,
                "check that TORCH_CUDA_ARCH_LIST reached the build (a stale build/ keeps the old list)",
                "gpu.arch",
            )
        )
    top = max(recipe.gpu.arch)
    if recipe.gpu.ptx and top.sm not in kernels.ptx:
        findings.append(
            Finding(
                "kernel-ptx-missing",
                Severity.WARNING,
                f"gpu.ptx = true asks for PTX for compute_{top.sm} but the wheel has "
                + (f"PTX only for {', '.join(sm_list(kernels.ptx))}" if kernels.ptx else "no PTX")
                + "; newer GPUs cannot JIT it",
                TORCH_ARCH_SOURCE,
                "check that TORCH_CUDA_ARCH_LIST ended in +PTX for the build",
                "gpu.ptx",
            )
        )
    return findings


def check_cross(wheel: WheelReport) -> list[Finding]:
    """cuobjdump disagreements (warnings), refusals (info) and libraries that are not ELF (warnings)."""
    findings = [
        Finding(
            "library-unreadable",
            Severity.WARNING,
            f"{lib.name}: {lib.unreadable}; its kernels and links were not checked",
            fix="check what this file is; a real shared library is an ELF file",
        )
        for lib in wheel.libraries
        if lib.unreadable
    ]
    for lib in wheel.libraries:
        check = lib.extra
        if not isinstance(check, CrossCheck) or check.status == "match":
            continue
        severity = Severity.WARNING if check.status == "mismatch" else Severity.INFO
        findings.append(
            Finding(
                rule=f"cuobjdump-{check.status}",
                severity=severity,
                message=f"{lib.name}: cuobjdump cross-check {check.status}: {check.message}",
                source=CUOBJDUMP_SOURCE,
            )
        )
    return findings


def verify_wheel(
    wheel_path: str | Path,
    recipe: Optional[Recipe],
    archs: Sequence[ComputeCapability] = (),
    *,
    host_mpi: Optional[HostMpi] = None,
    probe_host: bool = True,
    cuobjdump: Optional[Path] = None,
    progress: Optional[Progress] = None,
) -> VerifyReport:
    """Measure ``wheel_path`` and judge it against ``recipe`` (may be None) and ``archs``.

    ``archs`` defaults to the recipe's ``gpu.arch``. MPI versions are compared with ``host_mpi``,
    or, when it is None and ``probe_host`` is true, with what ``ompi_info``/``mpirun`` report on this
    machine (only when the recipe enables MPI). With ``cuobjdump``, every library with device code
    is cross-checked against that tool's listing.
    """
    hook: Optional[LibraryHook] = None
    if cuobjdump is not None:
        tool = cuobjdump

        def hook(member: str, path: Path, entries: Counter[FatbinEntry], relfatbin: frozenset) -> CrossCheck:
            return cross_check(tool, path, entries, relfatbin)

    wheel = measure_wheel(wheel_path, library_hook=hook, progress=progress)
    wanted = list(archs) or (list(recipe.gpu.arch) if recipe is not None else [])
    rows, findings = check_kernels(wheel, wanted)
    if recipe is not None:
        if recipe.mpi.enabled and host_mpi is None and probe_host:
            host_mpi = probe_host_mpi()
        findings += check_recipe_kernels(wheel, recipe)
        findings += check_mpi(wheel, recipe, host_mpi)
        findings += check_abi(wheel, recipe)
        findings += check_cuda_runtime(wheel, recipe)
    findings += check_cross(wheel)
    return VerifyReport(
        wheel=wheel,
        findings=tuple(findings),
        coverage=tuple(rows),
        recipe=recipe.name if recipe is not None else None,
        host_mpi=host_mpi,
        extra=glibc_facts(wheel),
    )


def glibc_facts(wheel: WheelReport) -> dict[str, Any]:
    """The glibc the wheel's ELF files need, the platform tag their symbol versions allow (glibc's,
    libstdc++'s, libgcc_s's, by auditwheel's policies: ``verify.manylinux``; external libraries
    such as CUDA's are not bundled, as the official torch wheels do, and do not bound it), the
    versions that keep it from the next older tag (``GLIBCXX_3.4.26 (libfoo.so)``), and the linked
    libraries the machine must provide beyond the policy's."""
    from srcbuild.verify.manylinux import wheel_tag_decision
    from srcbuild.verify.symbols import glibc_text, wheel_glibc

    decision = wheel_tag_decision(wheel.path, wheel.platform_tags)
    return {
        "glibc_needed": glibc_text(wheel_glibc(wheel.path)),
        "manylinux": decision.tag if decision is not None else "",
        "manylinux_held_back_by": [n.text() for n in decision.held_back_by] if decision is not None else [],
        "manylinux_unbundled": list(decision.unbundled) if decision is not None else [],
    }
