"""Known failure signatures of PyTorch and extension source builds, matched against a failed step's log.

Each signature is data: a regular expression, what it means, what to do, and where the fact
comes from. ``diagnose`` reports every signature found, in the order of this table, and the table
is ranked: what stops a build from outside the code (a full disk, a compiler killed or crashed by
a signal) comes first, since every later error line is its consequence. ``signal_of`` reads the
same from a command's exit code (137, 139, or a negative signal number).

``first_error`` is the line to read when no signature matched, ranked too: a compiler's
``file:line: error:`` before a tool's ``fatal``/``error:`` line, and those before any line that
merely contains the word error; banners that mention errors (setuptools' ``# configuration would
be ignored/result in error due to 'pyproject.toml' #``) and warnings are never one.
"""

from __future__ import annotations

import re
import signal
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


DISK_FULL = "disk-full"

SIGNATURES: tuple[Signature, ...] = (
    Signature(
        DISK_FULL,
        r"(No space left on device|Disk quota exceeded)",
        "a filesystem the build writes to is full ({0}); every later error follows from it",
        "free space on that filesystem (`df -h` shows which), or build in a larger one with --work-dir, "
        "then rerun with --resume",
        "errno ENOSPC/EDQUOT (strerror text, glibc)",
    ),
    Signature(
        "compiler-crashed",
        r"('\S+' died due to signal (?:11|6|7)\b.*|internal compiler error: (?:Segmentation fault|Aborted|Bus error)"
        r".*|Segmentation fault(?: \(core dumped\))?|(?:exit status|exit code|returned non-zero exit status) 139\b)",
        "a compiler crashed ({0}); on a full disk or in exhausted memory cicc and cc1plus crash this way",
        "check free disk (`df -h`) and memory, then rerun with --resume; run fewer compile jobs at once with "
        "--max-jobs if memory is short",
        "nvcc's 'died due to signal' message; gcc's internal compiler error; exit code 128+11 is SIGSEGV (signal(7))",
    ),
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
        r"(Killed signal terminated program \S+|'\S+' died due to signal 9\b.*|virtual memory exhausted"
        r"|(?:exit status|exit code|returned non-zero exit status) 137\b|cannot allocate memory|^Killed$)",
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


def signal_of(returncode: int) -> Diagnosis | None:
    """What a command's exit code says when a signal ended it (137: killed, 139: crashed), else None."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode in (134, 135, 137, 139) else 0
    if number <= 0:
        return None
    try:
        name = signal.Signals(number).name
    except ValueError:
        return None
    line = f"exit code {returncode} ({name})"
    wanted = "compiler-killed" if number == signal.SIGKILL else "compiler-crashed"
    sig = next(s for s in SIGNATURES if s.id == wanted)
    return Diagnosis(sig.id, line, sig.meaning.format(line), sig.hint, sig.source)


# Ranked: a compiler's own error (gcc/clang `file:line[:col]: error:`, nvcc/EDG `file(line): error:`,
# a linker's undefined reference), then a tool's fatal/error line, then any line with the word error.
_COMPILER_ERROR = re.compile(
    r"(^\S+:\d+(?::\d+)?: (?:fatal )?error\b|^\S+\(\d+\): (?:catastrophic )?error\b|undefined reference to"
    r"|^\S*nvcc (?:fatal|error)\s*:|^CMake Error\b)"
)
_TOOL_ERROR = re.compile(r"(^(?:\S+: )?(?:fatal )?error:|^fatal:|\bfatal error\b|^ERROR\b)", re.IGNORECASE)
_ANY_ERROR = re.compile(r"(\berror\b|\bfatal\b)", re.IGNORECASE)
# Lines that mention errors without being one: banners framed in #, !! or *, warnings, -Werror flags.
_NOT_AN_ERROR = re.compile(
    r"(^\s*(?:#|!!|\*{3}).*|\bwarning\b|-W(?:no-)?error\b|\berrors?=|0 errors?\b)", re.IGNORECASE
)


def first_error(lines: Iterable[str]) -> str | None:
    """The error line most likely to be the cause: the first compiler error, else the first tool
    error, else the first line naming an error that is not a banner or a warning."""
    best: tuple[int, str] | None = None
    for line in lines:
        if line.startswith(("+ ", "FAILED:")):
            continue
        if _COMPILER_ERROR.search(line):
            return line
        if _NOT_AN_ERROR.search(line):
            continue
        rank = 1 if _TOOL_ERROR.search(line) else 2 if _ANY_ERROR.search(line) else 3
        if rank < 3 and (best is None or rank < best[0]):
            best = (rank, line)
    return best[1] if best else None
