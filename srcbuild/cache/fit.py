"""Whether a cached wheel can run on a machine: Python tag, platform and glibc, driver CUDA level.

Rules, each with its source:

* Python: a ``cpXY`` wheel needs CPython X.Y; ``py3``/``abi3``/``none`` tags are looser
  (PEP 425, https://peps.python.org/pep-0425/).
* Platform and C library: ``linux_<arch>`` needs that CPU architecture; a binary linked against
  glibc X.Y needs glibc X.Y or newer (glibc symbol versioning, as PEP 600's ``manylinux_X_Y``
  tags state it, https://peps.python.org/pep-0600/). What a wheel needs is measured from its ELF
  files' symbol versions when it is cached (``manifest.glibc_needed``, ``verify.symbols``); an
  older entry without it falls back to the glibc its fingerprint named (schema 1) or its
  ``manylinux_X_Y`` tag. ``Machine`` is the target of a lookup: this machine, or the recorded
  description in ``SRCBUILD_MACHINE_FILE`` (``{"machine": "x86_64", "glibc": "2.39"}``), and
  ``fits`` says whether an entry can run there; lookups take the newest entry that fits.
* Driver: a CUDA X.Y build needs a driver whose CUDA level is at least X.Y; from CUDA 11 on, a
  driver of the same major runs later minors through minor-version compatibility, without PTX JIT
  of newer PTX (https://docs.nvidia.com/deploy/cuda-compatibility/ ; research compat.md §1.3, §2.1).
  When no driver answers (``nvidia-smi`` missing), the check is skipped with a note.
* GPU: when ``nvidia-smi`` reports compute capabilities, each GPU must be covered by the wheel's
  measured kernels (SASS of the same major and a lower or equal minor, or PTX no newer; CUDA C++
  Programming Guide, "Binary Compatibility" and "PTX Compatibility").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from packaging.utils import parse_wheel_filename

from srcbuild import proc
from srcbuild.cache.manifest import Manifest
from srcbuild.capability import ComputeCapability
from srcbuild.errors import UsageError
from srcbuild.findings import Finding, Severity
from srcbuild.precedence import env_value
from srcbuild.records import record

CUDA_COMPAT_SOURCE = "https://docs.nvidia.com/deploy/cuda-compatibility/"
PEP425 = "https://peps.python.org/pep-0425/"
PEP600 = "https://peps.python.org/pep-0600/"
BINARY_COMPAT_SOURCE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"

# os.uname().machine is what platform.machine() answers on Linux, without importing platform (half
# of this query's cost: its regular expressions compile when imported)
_TARGET_QUERY = (
    "import sys, os; "
    "print(sys.implementation.name, '%d.%d' % sys.version_info[:2], os.uname().machine, "
    "(os.confstr('CS_GNU_LIBC_VERSION') or '') if hasattr(os, 'confstr') else '', sep='|')"
)
_SMI_CUDA = re.compile(r"CUDA Version:\s*(\d+)\.(\d+)")
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(.+)\Z")
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


@record
class Target:
    """The interpreter a wheel is installed for, and the machine it runs on."""

    python: Path
    implementation: str  # "cpython"
    version: str  # "3.8"
    machine: str  # "x86_64"
    glibc: tuple[int, int] | None
    driver_cuda: tuple[int, int] | None  # None: no driver answered
    gpus: tuple[ComputeCapability, ...] = ()  # compute capabilities of this machine's GPUs, when known

    @property
    def cp_tag(self) -> str:
        return "cp" + self.version.replace(".", "")


def _version_pair(text: str) -> tuple[int, int] | None:
    m = re.search(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def probe_driver_cuda() -> tuple[int, int] | None:
    """The driver's CUDA level from ``nvidia-smi``'s header (``CUDA Version: 11.4``), if a driver answers."""
    out = proc.probe(["nvidia-smi"])
    if not out:
        return None
    m = _SMI_CUDA.search(out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def probe_gpus() -> tuple[ComputeCapability, ...]:
    """Compute capabilities from ``nvidia-smi --query-gpu=compute_cap`` (drivers from about R510 answer)."""
    out = proc.probe(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"])
    found = []
    for line in (out or "").splitlines():
        try:
            found.append(ComputeCapability.parse(line.strip()))
        except ValueError:
            continue
    return tuple(found)


def probe_target(python: Path, driver_cuda: tuple[int, int] | None = None, probe_driver: bool = True) -> Target | None:
    """Ask ``python`` what it is (and ``nvidia-smi`` about the driver and GPUs); None when it does not run."""
    if python.is_absolute() and not python.exists():  # nothing to ask: no process for a missing file
        return None
    # the driver's two nvidia-smi queries run while the interpreter answers (each is a process start)
    asked_cuda = proc.Background(probe_driver_cuda) if driver_cuda is None and probe_driver else None
    asked_gpus = proc.Background(probe_gpus) if probe_driver else None
    # -S: the answer needs no site-packages, and the interpreter starts in half the time without them
    out = proc.probe([str(python), "-S", "-c", _TARGET_QUERY])
    driver = asked_cuda.result() if asked_cuda is not None else driver_cuda
    gpus = asked_gpus.result() if asked_gpus is not None else ()
    if not out:
        return None
    parts = out.strip().splitlines()[-1].split("|")
    if len(parts) != 4:
        return None
    implementation, version, machine, libc = parts
    return Target(
        python=python,
        implementation=implementation,
        version=version,
        machine=machine,
        glibc=_version_pair(libc) if libc.startswith("glibc") else None,
        driver_cuda=driver,
        gpus=gpus,
    )


@record
class Machine:
    """What a lookup needs of the machine a wheel is for: its CPU architecture and glibc."""

    machine: str
    glibc: tuple[int, int] | None

    @classmethod
    def host(cls, environ: Mapping[str, str]) -> Machine:
        """This machine, or the description recorded in ``SRCBUILD_MACHINE_FILE``."""
        from srcbuild.host.platform import host_libc, host_machine

        described = env_value(environ, "SRCBUILD_MACHINE_FILE")
        if described:
            return cls.read(Path(described))
        return cls(host_machine(), _version_pair(host_libc()))

    @classmethod
    def read(cls, path: Path) -> Machine:
        """A recorded description: ``{"machine": "x86_64", "glibc": "2.39"}`` (JSON)."""
        import json

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(str(data["machine"]), _version_pair(str(data.get("glibc") or "")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(
                f"SRCBUILD_MACHINE_FILE {path}: not a machine description ({type(exc).__name__}: {exc})",
                'write {"machine": "x86_64", "glibc": "2.39"} there, or unset SRCBUILD_MACHINE_FILE',
            ) from None

    def label(self) -> str:
        return f"{self.machine}, glibc {_fmt(self.glibc)}" if self.glibc else self.machine


def needed_glibc(manifest: Manifest) -> tuple[int, int] | None:
    """The glibc the entry's wheel needs (see the module docstring for the fallbacks)."""
    if manifest.glibc_needed:
        return _version_pair(manifest.glibc_needed)
    needed: tuple[int, int] | None = None
    built = str(manifest.key_inputs.get("platform", ""))
    if "-glibc" in built:
        needed = _version_pair(built.split("-glibc", 1)[1])
    try:
        tags = parse_wheel_filename(manifest.wheel)[3]
    except ValueError:
        return needed
    for tag in tags:
        m = _MANYLINUX.match(tag.platform)
        if m:
            needed = max(needed or (0, 0), (int(m.group(1)), int(m.group(2))))
    return needed


def fits(manifest: Manifest, machine: Machine) -> bool:
    """Whether the entry's wheel can run on ``machine`` as far as its glibc goes."""
    needed = needed_glibc(manifest)
    return needed is None or machine.glibc is None or machine.glibc >= needed


def _fmt(pair: tuple[int, int]) -> str:
    return f"{pair[0]}.{pair[1]}"


def check_fit(manifest: Manifest, target: Target) -> list[Finding]:
    """Every reason the wheel of ``manifest`` cannot (or may not) run on ``target``."""
    findings: list[Finding] = []
    _name, _version, _build, tags = parse_wheel_filename(manifest.wheel)
    cp = target.cp_tag
    major = "py" + target.version.split(".")[0]
    python_ok = any(
        t.interpreter in (cp, major, "py" + target.version.replace(".", ""))
        and (t.abi.startswith(cp) or t.abi in ("abi3", "none"))
        for t in tags
    )
    if target.implementation != "cpython" or not python_ok:
        wanted = sorted({t.interpreter for t in tags})
        findings.append(
            Finding(
                "wheel-python",
                Severity.ERROR,
                f"{manifest.wheel} is for {', '.join(wanted)}; the target {target.python} is "
                f"{target.implementation} {target.version}",
                source=PEP425,
                fix=f"install into an environment of Python {manifest.recipe.get('toolchain', {}).get('python', '?')} "
                "(--into PREFIX or --python), or use a recipe for this Python",
                field="toolchain.python",
            )
        )
    findings.extend(_platform_findings(manifest, target, {t.platform for t in tags}))
    findings.extend(_driver_findings(manifest, target))
    findings.extend(_gpu_findings(manifest, target))
    return findings


def _gpu_findings(manifest: Manifest, target: Target) -> list[Finding]:
    """Each GPU of the machine must be able to run the wheel's kernels (``verify.kernels.covers``)."""
    if not manifest.key_inputs.get("cuda") or not target.gpus:
        return []
    from srcbuild.verify.kernels import covers, sm_text

    kernels = manifest.kernels
    missing = [cc for cc in target.gpus if not covers(kernels, cc)]
    if not missing:
        return []
    ccs = ", ".join(str(cc) for cc in missing)
    return [
        Finding(
            "wheel-gpu",
            Severity.ERROR,
            f"no kernel in {manifest.wheel} runs on this machine's GPU (compute capability {ccs}): it has SASS for "
            f"{sm_text(manifest.sass)} and PTX for {sm_text(manifest.ptx)}",
            source=BINARY_COMPAT_SOURCE,
            fix=f"use a recipe whose gpu.arch includes {ccs}",
        )
    ]


def _platform_findings(manifest: Manifest, target: Target, platforms: set[str]) -> list[Finding]:
    findings = []
    needed: tuple[int, int] | None = None
    arch_ok = "any" in platforms
    for plat in platforms:
        m = _MANYLINUX.match(plat)
        if m:
            needed = max(needed or (0, 0), (int(m.group(1)), int(m.group(2))))
            arch_ok = arch_ok or m.group(3) == target.machine
        elif plat in _LEGACY_MANYLINUX or plat.split("_x86_64")[0] in _LEGACY_MANYLINUX:
            arch_ok = arch_ok or plat.endswith(target.machine)
        elif plat.startswith("linux_"):
            arch_ok = arch_ok or plat[len("linux_") :] == target.machine
    if not arch_ok:
        findings.append(
            Finding(
                "wheel-platform",
                Severity.ERROR,
                f"{manifest.wheel} is for {', '.join(sorted(platforms))}; this machine is {target.machine}",
                source=PEP425,
                fix="build the recipe on a machine of this architecture",
            )
        )
    measured = needed_glibc(manifest)
    if measured is not None:
        needed = max(needed or (0, 0), measured)
    if needed is not None and target.glibc is not None and target.glibc < needed:
        findings.append(
            Finding(
                "wheel-glibc",
                Severity.ERROR,
                f"{manifest.wheel} needs glibc {_fmt(needed)}; this machine has glibc "
                f"{_fmt(target.glibc)}",
                source=PEP600,
                fix="build the recipe on this machine (or on one with the same or an older glibc)",
            )
        )
    return findings


def _driver_findings(manifest: Manifest, target: Target) -> list[Finding]:
    cuda = manifest.key_inputs.get("cuda")
    if not cuda:
        return []
    wheel_cuda = _version_pair(str(cuda))
    if wheel_cuda is None:
        return []
    if target.driver_cuda is None:
        return [
            Finding(
                "driver-cuda",
                Severity.INFO,
                f"no NVIDIA driver answered (nvidia-smi); not checked that it runs CUDA {_fmt(wheel_cuda)}",
                source=CUDA_COMPAT_SOURCE,
            )
        ]
    driver = target.driver_cuda
    if driver >= wheel_cuda:
        return []
    if driver[0] == wheel_cuda[0] and wheel_cuda[0] >= 11:
        return [
            Finding(
                "driver-cuda",
                Severity.WARNING,
                f"the driver supports CUDA {_fmt(driver)}, the wheel is built with CUDA {_fmt(wheel_cuda)}: it runs "
                "through minor-version compatibility, but PTX newer than the driver cannot be JIT-compiled",
                source=CUDA_COMPAT_SOURCE,
                fix=f"make sure the wheel has SASS for your GPU, or install a driver for CUDA {_fmt(wheel_cuda)}",
            )
        ]
    return [
        Finding(
            "driver-cuda",
            Severity.ERROR,
            f"the wheel needs a driver for CUDA {_fmt(wheel_cuda)}; this driver supports CUDA {_fmt(driver)} at most",
            source=CUDA_COMPAT_SOURCE,
            fix=f"install a newer driver, or use a recipe with CUDA {_fmt(driver)} or older",
        )
    ]
