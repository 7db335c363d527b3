"""Known failure signatures of PyTorch source builds, matched against a failed step's log.

Each signature is data: a regular expression, what it means, what to do, and where the fact
comes from. ``diagnose`` reports every signature found, in the order of this table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from srcbuild.records import record


@record
class Signature:
    id: str
    pattern: str
    meaning: str  # may use {0}, {1}: the regex groups
    hint: str
    source: str


@record
class Diagnosis:
    id: str
    line: str  # the log line that matched
    meaning: str
    hint: str
    source: str

    def render(self) -> str:
        matched = self.line.strip()[:200]
        return f"diagnosis: {self.meaning}\n  matched: {matched}\n  fix: {self.hint}\n  source: {self.source}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "line": self.line, "meaning": self.meaning, "hint": self.hint, "source": self.source}


SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "unsupported-gnu-version",
        r"unsupported GNU version! gcc versions later than (\d+) are not supported",
        "nvcc refuses the host compiler: this CUDA accepts gcc {0} at most",
        "set [toolchain] gcc to {0} or older in the recipe (srcbuild selects it through update-alternatives)",
        "CUDA crt/host_config.h; research notes feasibility.md §1 (nvcc 11.8 with gcc-12)",
    ),
    Signature(
        "unsupported-gpu-arch",
        r"Unsupported gpu architecture '(compute_\d+|sm_\d+)'",
        "this CUDA's nvcc cannot compile for {0}",
        "use a CUDA release that still supports that architecture, or remove it from [gpu] arch "
        "(`srcbuild recipes check` shows the supported range)",
        "nvcc --list-gpu-arch; research notes feasibility.md §1f (CUDA 13 refuses compute_35/37/50)",
    ),
    Signature(
        "sm30-intrinsics",
        r'identifier "(__ldg|__funnelshift_[lr])" is undefined',
        "{0} does not exist on compute capability 3.0; the bundled NCCL (and some kernels) use it",
        'build without NCCL (USE_NCCL = "0" in [build] env) or drop 3.0 from [gpu] arch',
        "dizcza/pytorch-sm30-docker#3",
    ),
    Signature(
        "compiler-killed",
        r"(Killed signal terminated program \S+|virtual memory exhausted|exit status 137|cannot allocate memory)",
        "the compiler was killed, most likely by the out-of-memory killer ({0})",
        "run fewer compile jobs at once: --max-jobs with a smaller number (then --resume)",
        "pytorch/pytorch#5295, #89725",
    ),
    Signature(
        "mpi-not-found",
        r"(Could NOT find MPI\S*|Not compiling with MPI)",
        "CMake did not find MPI ({0}), so the build has no MPI backend",
        "install MPI (e.g. the libopenmpi-dev and openmpi-bin packages) or put its mpicc on PATH / set MPI_HOME; "
        "or set [mpi] enabled = false",
        "torch cmake/Dependencies.cmake (`find_package(MPI)`); research notes torch-build.md §2",
    ),
    Signature(
        "submodule-fetch",
        r"(fatal: clone of '[^']+' into submodule path|Failed to clone '[^']+'|fatal: unable to access '[^']+'"
        r"|Could not resolve host: \S+|fatal: could not read Username for '[^']+')",
        "a repository or submodule could not be fetched ({0})",
        "fetch through a mirror: --mirror gitee, or --mirror https://github.com/=<your mirror>/ (repeatable)",
        "research notes torch-build.md §4",
    ),
    Signature(
        "cmake-too-new",
        r"Compatibility with CMake < (3\.\d+) has been removed",
        "this tag's CMakeLists ask for a CMake older than {0}, which this CMake no longer emulates",
        'add CMAKE_POLICY_VERSION_MINIMUM = "3.5" to [build] env, or pin an older cmake in [env] pip',
        "CMake 4.0 release notes; research notes torch-build.md §5",
    ),
)


def diagnose(lines: Iterable[str], signatures: tuple[Signature, ...] = SIGNATURES) -> list[Diagnosis]:
    """Every signature found in ``lines`` (first match of each), in table order."""
    compiled = [(s, re.compile(s.pattern)) for s in signatures]
    found: dict[str, Diagnosis] = {}
    for line in lines:
        for sig, rx in compiled:
            if sig.id in found:
                continue
            m = rx.search(line)
            if m:
                groups = m.groups() or (m.group(0),)
                found[sig.id] = Diagnosis(
                    sig.id, line, sig.meaning.format(*groups), sig.hint.format(*groups), sig.source
                )
    return [found[s.id] for s in signatures if s.id in found]


_ERROR_LINE = re.compile(r"(\berror\b|\bfatal\b|FAILED:)", re.IGNORECASE)


def first_error(lines: Iterable[str]) -> str | None:
    """The first compiler or CMake error line: usually the cause, the rest follows from it."""
    for line in lines:
        if _ERROR_LINE.search(line) and not line.startswith(("+ ", "FAILED:")):
            return line
    return None
