"""Host preflight: is the recipe's toolchain really on this machine, in the pinned versions?

``host_findings(recipe, host, paths)`` compares a recipe with ``HostFacts`` and returns every miss
at once, each one message saying what is missing, where srcbuild looked, and how to get it on
Debian/Ubuntu (apt package names, or NVIDIA's archives for old CUDA and cuDNN) and how to point
srcbuild at it (``CUDA_HOME``, ``PATH``, ``CUDNN_INCLUDE_DIR``, ``MPI_HOME``). It also checks free
disk in the work directory and memory, and states the memory-bounded ``MAX_JOBS``.

A piece the recipe's build environment installs itself (``[env] conda = [...]``) is not required
on the host.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

from srcbuild.findings import Finding, Severity
from srcbuild.host.facts import CudaToolkit, HostFacts, version_matches
from srcbuild.host.jobs import GIB, PER_JOB_GIB, RESERVE_GIB, max_jobs
from srcbuild.host.jobs import SOURCE as JOBS_SOURCE
from srcbuild.host.toolchain import CONTRACT_VAR
from srcbuild.knowledge.cuda_components import components_for
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.recipe.catalog import recipe_reference

# Free disk in the work dir. Below DISK_MIN_GIB a build cannot finish ("you ran out of disk space ...
# Ideally 5 GB of space", pytorch/pytorch#2046, for a 2017 tree); below DISK_WARN_GIB it may not:
# a shallow recursive checkout alone is up to 1.5 GB (torch-build.md §4d) and a CUDA build tree with
# ccache is several times that (estimate).
DISK_MIN_GIB = 5
DISK_WARN_GIB = 20
DISK_SOURCE = "pytorch/pytorch#2046; torch-build.md §4d (estimate)"

# Where Debian and Ubuntu ship gcc-N (Debian and Ubuntu package archives). bookworm: only 11 and 12.
APT_GCC = {
    4: "Ubuntu 16.04 (gcc-4.8, gcc-4.9 on 18.04)",
    5: "Ubuntu 16.04 and 18.04",
    6: "Ubuntu 18.04",
    7: "Ubuntu 18.04 and 20.04",
    8: "Ubuntu 18.04, 20.04 and Debian 10",
    9: "Ubuntu 20.04 and 22.04, Debian 11",
    10: "Ubuntu 20.04 and 22.04, Debian 11",
    11: "Ubuntu 22.04 and 24.04, Debian 12",
    12: "Ubuntu 22.04 and 24.04, Debian 12",
    13: "Ubuntu 24.04",
    14: "Ubuntu 24.04",
}
APT_OPENMPI = {
    "4.0": "Ubuntu 20.04",
    "4.1": "Ubuntu 22.04 and 24.04, Debian 11 and 12",
    "3.1": "Ubuntu 18.04, Debian 10",
}
MPI_LABELS = {"openmpi": "Open MPI", "mpich": "MPICH", "intel-mpi": "Intel MPI"}
CUDA_ARCHIVE = "NVIDIA's CUDA Toolkit archive (https://developer.nvidia.com/cuda-toolkit-archive)"
CUDNN_ARCHIVE = "NVIDIA's cuDNN archive (https://developer.nvidia.com/rdp/cudnn-archive)"
# The one CUDA a Debian release packages itself (nvidia-cuda-toolkit in non-free; feasibility.md 1c).
APT_CUDA = {"11.8": "Debian 12 (non-free)"}


def provided_by_env(recipe: Recipe, *names: str) -> str | None:
    """The conda spec in ``[env] conda`` that provides one of ``names``, if any."""
    for spec in recipe.env.conda:
        base = spec.split("=")[0].split(">")[0].split("<")[0].split(" ")[0].strip()
        if base in names:
            return spec
    return None


def _gcc_hint(major: int) -> str:
    where = APT_GCC.get(major)
    apt = f"`sudo apt-get install gcc-{major} g++-{major}`" + (f" (packaged in {where})" if where else "")
    return f"install it with {apt}, or put a gcc {major} on PATH as gcc-{major} (or gcc)"


def _provision_hint(recipe: Recipe) -> str:
    """The command that fetches what the recipe pins into srcbuild's own prefixes (no root)."""
    command = f"srcbuild toolchain install --recipe {recipe_reference(recipe)}"
    return f"run `{command}` (fetches it into a private prefix); or "


def check_gcc(recipe: Recipe, host: HostFacts) -> list[Finding]:
    major = int(recipe.toolchain.gcc.split(".")[0])
    if host.gcc(major) is not None or provided_by_env(recipe, "gcc", "gcc_linux-64", "gxx_linux-64"):
        return []
    found = ", ".join(g.version for g in host.gccs) or "none"
    return [
        Finding(
            rule="host-gcc",
            severity=Severity.ERROR,
            message=(
                f"gcc {major} (toolchain.gcc) is not installed: no gcc-{major} on PATH, in /usr/bin or "
                f"/usr/local/bin (gcc found here: {found})"
            ),
            fix=_provision_hint(recipe) + _gcc_hint(major),
            field="toolchain.gcc",
        )
    ]


def _cuda_hint(version: str) -> str:
    release = ".".join(version.split(".")[:2])
    home = f"/usr/local/cuda-{release}"
    ways = [
        f"install CUDA {release} from {CUDA_ARCHIVE} with the runfile: "
        f"`sh cuda_{release}*_linux.run --silent --toolkit --toolkitpath={home}`"
    ]
    if release in APT_CUDA:
        ways.append(f"`sudo apt-get install nvidia-cuda-toolkit` on {APT_CUDA[release]}")
    if int(release.split(".")[0]) >= 11:
        ways.append(f"`sudo apt-get install cuda-toolkit-{release.replace('.', '-')}` from NVIDIA's apt repository")
    return f"{'; or '.join(ways)}; srcbuild looks in {home}, or set CUDA_HOME to the toolkit's directory"


def _toolkit_label(toolkit: CudaToolkit) -> str:
    """ "13.0.88 in /usr/local/cuda-13.0", naming the variable when one pointed there."""
    via = f" (from {toolkit.source})" if toolkit.source in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") else ""
    return f"{toolkit.version} in {toolkit.home}{via}"


def check_cuda(recipe: Recipe, host: HostFacts) -> list[Finding]:
    pinned = recipe.toolchain.cuda
    if pinned is None or provided_by_env(recipe, "cudatoolkit-dev", "cuda-nvcc", "cuda-toolkit", "cuda"):
        return []
    if host.cuda_toolkit(pinned) is not None:
        return []
    found = ", ".join(_toolkit_label(t) for t in host.cuda_toolkits) or "none"
    release = ".".join(pinned.split(".")[:2])
    return [
        Finding(
            rule="host-cuda",
            severity=Severity.ERROR,
            message=(
                f"CUDA {pinned} (toolchain.cuda) is not installed: no nvcc reporting release {release} in "
                f"CUDA_HOME, /usr/local/cuda-{release}, /usr/local/cuda or on PATH (CUDA found here: {found})"
            ),
            fix=_provision_hint(recipe) + _cuda_hint(pinned),
            field="toolchain.cuda",
        )
    ]


def _complete_command(toolkit: CudaToolkit) -> str:
    """The command that provisions a complete home of the toolkit's release (``srcbuild toolchain
    install`` remakes a provisioned home that is incomplete, and the probe prefers a complete one)."""
    provisioned = toolkit.source.startswith("srcbuild toolchain ")
    key = toolkit.source.removeprefix("srcbuild toolchain ") if provisioned else ""
    provider = key.rsplit("-", 1)[-1] if provisioned else ""
    how = f" --from {provider}" if provider else ""
    return f"srcbuild toolchain install cuda {toolkit.release}{how}"


def check_cuda_complete(recipe: Recipe, host: HostFacts) -> list[Finding]:
    """The CUDA home the build uses must hold every component of the complete-home contract."""
    pinned = recipe.toolchain.cuda
    toolkit = host.cuda_toolkit(pinned) if pinned else None
    if toolkit is None or toolkit.complete:
        return []
    by_name = {c.name: c for c in components_for(toolkit.version)}
    parts = []
    for name in toolkit.missing:
        component = by_name.get(name)
        if component is not None:
            names = [*(h.split("|")[0] for h in component.headers), *component.files]
            parts.append(f"{name} ({', '.join(names)}; {component.needed_by})")
        else:
            parts.append(name)
    command = _complete_command(toolkit)
    named = toolkit.source in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
    unset = f", once you `unset {toolkit.source}`" if named else ""
    warn = host.cuda_contract == "warn"
    return [
        Finding(
            rule="host-cuda-incomplete",
            severity=Severity.WARNING if warn else Severity.ERROR,
            message=(
                f"the CUDA {toolkit.release} home {toolkit.home} lacks what a torch build compiles: "
                + "; ".join(parts)
            ),
            source="srcbuild/knowledge/data/cuda_components.toml",
            fix=(
                f"run `{command}` (a complete home from NVIDIA's packages, which srcbuild then uses{unset}); "
                f"or `export {CONTRACT_VAR}=warn` if your build includes none of these"
            ),
            field="toolchain.cuda",
        )
    ]


def check_cudnn(recipe: Recipe, host: HostFacts) -> list[Finding]:
    pinned = recipe.toolchain.cudnn
    if not pinned or recipe.toolchain.cuda is None or provided_by_env(recipe, "cudnn"):
        return []
    if host.cudnn_version(pinned) is not None:
        return []
    found = ", ".join(f"{c.version} ({c.header})" for c in host.cudnn) or "none"
    cuda = recipe.toolchain.cuda
    return [
        Finding(
            rule="host-cudnn",
            severity=Severity.ERROR,
            message=(
                f"cuDNN {pinned} (toolchain.cudnn) is not installed: no cudnn_version.h or cudnn.h of version "
                f"{pinned} in the CUDA toolkits' include directories or /usr/include (cuDNN found here: {found})"
            ),
            fix=_provision_hint(recipe)
            + (
                f"download cuDNN {pinned} for CUDA {cuda} from {CUDNN_ARCHIVE}, unpack its include/ and lib64/ "
                f"into the CUDA {cuda} directory, or set CUDNN_INCLUDE_DIR and CUDNN_LIB_DIR to where you unpacked it"
            ),
            field="toolchain.cudnn",
        )
    ]


def check_mpi(recipe: Recipe, host: HostFacts) -> list[Finding]:
    mpi = recipe.mpi
    if not mpi.enabled or provided_by_env(recipe, "openmpi", "mpich"):
        return []
    label = MPI_LABELS.get(mpi.implementation, mpi.implementation)
    wanted = f"{label} {mpi.version}" if mpi.version else label
    for install in host.mpi:
        if install.implementation != mpi.implementation:
            continue
        if mpi.version and not version_matches(mpi.version, install.version):
            continue
        if install.mpicc and install.mpicxx:
            return []
    found = (
        ", ".join(
            f"{MPI_LABELS.get(m.implementation, m.implementation)} {m.version} ({m.mpicc or m.source})"
            for m in host.mpi
        )
        or "none"
    )
    if mpi.implementation == "openmpi":
        where = APT_OPENMPI.get(mpi.version or "")
        apt = "`sudo apt-get install libopenmpi-dev openmpi-bin`" + (
            f" (Open MPI {mpi.version} is in {where} only)" if where else ""
        )
    else:
        apt = "`sudo apt-get install libmpich-dev mpich`"
    return [
        Finding(
            rule="host-mpi",
            severity=Severity.ERROR,
            message=(
                f"{wanted} (mpi.version) is not installed: no mpicc and mpicxx of it on PATH or under MPI_HOME "
                f"(MPI found here: {found})"
            ),
            fix=_provision_hint(recipe)
            + f"install it with {apt}, or set MPI_HOME to an installation of {wanted} (its bin/ holds mpicc)",
            field="mpi",
        )
    ]


def check_disk(host: HostFacts, paths: Paths) -> list[Finding]:
    res = host.resources
    if res is None or res.disk_free_bytes is None:
        return []
    free = res.disk_free_bytes / GIB
    if free >= DISK_WARN_GIB:
        return []
    severity = Severity.ERROR if free < DISK_MIN_GIB else Severity.WARNING
    need = DISK_MIN_GIB if severity is Severity.ERROR else DISK_WARN_GIB
    return [
        Finding(
            rule="host-disk",
            severity=severity,
            message=f"only {free:.1f} GiB free in the work directory {paths.work_dir}; a build needs about {need} GiB",
            source=DISK_SOURCE,
            fix="free some space, or choose a work directory on a larger disk with --work-dir or SRCBUILD_WORK_DIR",
        )
    ]


def check_memory(host: HostFacts) -> list[Finding]:
    res = host.resources
    if res is None:
        return []
    jobs, reason = max_jobs(res.memory_bytes, res.cores)
    findings = [
        Finding(rule="host-jobs", severity=Severity.INFO, message=f"MAX_JOBS={jobs}: {reason}", source=JOBS_SOURCE)
    ]
    if res.memory_bytes is not None and res.memory_bytes < (PER_JOB_GIB + RESERVE_GIB) * GIB:
        findings.append(
            Finding(
                rule="host-memory",
                severity=Severity.WARNING,
                message=(
                    f"only {res.memory_bytes / GIB:.1f} GiB of memory: even one compile job at a time "
                    f"({PER_JOB_GIB:g} GiB) may be killed by the kernel's OOM killer"
                ),
                source=JOBS_SOURCE,
                fix="add swap (e.g. 8 GiB) or build on a machine with more memory and share the wheel",
            )
        )
    return findings


# Python.h, which every C/C++ extension (torch's own _C included) compiles against, is in the
# interpreter's include directory (sysconfig's "include" path); Debian and Ubuntu ship it in
# pythonX.Y-dev (libpythonX.Y-dev), Fedora and RHEL in pythonX.Y-devel (their package archives).
HEADERS_SOURCE = "Python's sysconfig 'include' path; Debian/Ubuntu pythonX.Y-dev, Fedora/RHEL pythonX.Y-devel"


def check_python_headers(version: str, include: Path | None = None) -> list[Finding]:
    """The headers of the host Python a venv build environment is made from (``include``: its
    sysconfig include directory; default: the interpreter running srcbuild, whose base a venv uses)."""
    where = include if include is not None else Path(sysconfig.get_path("include"))
    if (where / "Python.h").is_file():
        return []
    return [
        Finding(
            rule="host-python-headers",
            severity=Severity.ERROR,
            message=(
                f"Python {version}'s headers are not installed ({where}/Python.h is missing): the build "
                "environment is a venv of the host's Python, and every extension compiles against them"
            ),
            fix=(
                f"install them (Debian/Ubuntu: sudo apt-get install python{version}-dev; Fedora/RHEL: "
                f"sudo dnf install python{version}-devel), or build in a conda environment, which has "
                "them: --env-backend rattler"
            ),
            source=HEADERS_SOURCE,
            field="toolchain.python",
        )
    ]


def host_findings(recipe: Recipe, host: HostFacts, paths: Paths) -> list[Finding]:
    """Every way this machine falls short of ``recipe``, all at once (empty when it can build)."""
    return [
        *check_cuda(recipe, host),
        *check_cuda_complete(recipe, host),
        *check_gcc(recipe, host),
        *check_cudnn(recipe, host),
        *check_mpi(recipe, host),
        *check_disk(host, paths),
        *check_memory(host),
    ]
