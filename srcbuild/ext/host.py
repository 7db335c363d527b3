"""An extension's own view of the recipe and the host: its Python from the torch, its own disk need.

An extension links torch and the CUDA runtime, nothing of torch's own toolchain: ``for_extension``
is the recipe as an extension build resolves it, with no cuDNN and no MPI (and the resolve step
told to provision neither MAGMA nor NCCL: ``BuildOptions.extension``), and with the Python the
torch it builds against was made for. An extension's binary must match that torch's Python ABI,
so the recipe's Python pin is advice here, not a wall:

- ``--env PREFIX``: the environment's own Python;
- ``--torch-wheel FILE`` or the recipe's torch wheel from the cache: the wheel's ``cpXY`` tag;
- ``--torch VERSION``: a Python the index has a torch wheel of that version for on this platform,
  preferring the recipe's pin when this machine has that Python, then the Python srcbuild runs
  with, then the newest this machine has (a venv of it needs no conda channel).

``disk_need`` replaces a torch build's 5 GiB check with the extension's own: the sdist unpacked
and compiled once per arch, plus the torch wheel installed into the build environment.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path

from packaging.utils import parse_wheel_filename

from srcbuild.findings import Finding, Severity
from srcbuild.recipe import Recipe
from srcbuild.recipe.model import Mpi

MIB = 2**20
GIB = 2**30
# The build tree of an extension: the sdist unpacked (about 4x its compressed size) and one object
# per source file per arch; a CUDA object per arch is about the size of its source's share of the
# sdist times 10 (estimates, from the torch-scatter 2.1.2 build for 3.5+3.7: a 3 MB tree, a 9 MB
# wheel). A floor covers pip's own temporary copies.
TREE_FLOOR = 256 * MIB
PER_ARCH_FACTOR = 40
INSTALLED_FACTOR = 3  # a torch wheel installed takes about 3x its size (its libraries uncompressed)
DISK_SOURCE = "estimate: sdist size x (4 + 40 per arch), torch wheel x 3 installed, 256 MiB floor"


def wheel_python(wheel: Path) -> str | None:
    """The CPython version a wheel is built for ("3.11" from cp311), or None for a pure one."""
    try:
        tags = parse_wheel_filename(wheel.name)[3]
    except ValueError:
        return None
    for tag in tags:
        if tag.interpreter.startswith("cp") and tag.interpreter[2:].isdigit():
            digits = tag.interpreter[2:]
            return f"{digits[0]}.{digits[1:]}"
    return None


def pick_python(pin: str, offered: Collection[str], here: Collection[str]) -> str | None:
    """The Python to build with among those torch has wheels for (``offered``): the recipe's pin
    when this machine has it, then srcbuild's own, then the newest this machine has; None if none."""
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for want in (pin, own):
        if want in offered and want in here:
            return want
    usable = sorted((p for p in offered if p in here), key=lambda v: tuple(int(x) for x in v.split(".")))
    return usable[-1] if usable else None


# The oldest gcc that compiles against every torch srcbuild knows for a CPU extension: torch 2.13
# and later are C++20 (gcc >= 11.3; recipes/cpu.toml).
CPU_GCC_FLOOR = 11


def cpu_gcc(pin: str, path: str | None) -> str:
    """The gcc of a CPU extension build: the recipe's pin when this machine has ``gcc-PIN``, else
    the newest ``gcc-N`` on ``path`` from ``CPU_GCC_FLOOR`` on (no CUDA caps the host compiler of a
    CPU build, so the pin is advice there too), else the pin (provisioned as for any build)."""
    found = {int(n) for n in _gcc_majors(path)}
    if pin.isdigit() and int(pin) in found:
        return pin
    usable = sorted(n for n in found if n >= CPU_GCC_FLOOR)
    return str(usable[-1]) if usable else pin


def _gcc_majors(path: str | None) -> set[str]:
    import os
    import re

    out: set[str] = set()
    for folder in (path or os.defpath).split(os.pathsep):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        out.update(m.group(1) for n in names if (m := re.fullmatch(r"gcc-(\d+)", n)))
    return out


def for_extension(recipe: Recipe, python: str, gcc: str | None = None) -> Recipe:
    """``recipe`` as an extension build resolves it (see the module docstring); ``gcc`` replaces
    the recipe's pin for a CPU build (``cpu_gcc``)."""
    toolchain = replace(recipe.toolchain, python=python, cudnn=None, gcc=gcc or recipe.toolchain.gcc)
    return replace(recipe, toolchain=toolchain, mpi=Mpi(enabled=False))


def python_finding(recipe: Recipe, python: str, why: str) -> tuple[Finding, ...]:
    """An INFO finding when the extension's Python is not the recipe's pin (it is advice here)."""
    pin = recipe.toolchain.python
    if python == pin:
        return ()
    return (Finding(
        "ext-python", Severity.INFO,
        f"recipe {recipe.name} pins Python {pin}; the extension is built with Python {python}, {why}: an "
        "extension must match the Python of the torch it builds against, so the recipe's pin is advice here",
        field="toolchain.python",
    ),)


def disk_need(sdist_bytes: int | None, archs: int, torch_wheel_bytes: int | None) -> int:
    """Bytes of free disk an extension build needs (see ``DISK_SOURCE``)."""
    tree = (sdist_bytes or 2 * MIB) * (4 + PER_ARCH_FACTOR * max(archs, 1))
    return TREE_FLOOR + tree + (torch_wheel_bytes or 0) * INSTALLED_FACTOR


def disk_findings(need: int, free: int | None, work_dir: Path) -> tuple[Finding, ...]:
    """An error when the work directory has less free space than the extension build needs."""
    if free is None or free >= need:
        return ()
    return (Finding(
        "ext-disk", Severity.ERROR,
        f"only {free / GIB:.1f} GiB free in the work directory {work_dir}; this extension build needs about "
        f"{need / GIB:.1f} GiB",
        source=DISK_SOURCE,
        fix="free some space, or choose a work directory on a larger disk with --work-dir or SRCBUILD_WORK_DIR",
    ),)


def without_torch_disk(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """A torch build's disk finding does not apply to an extension (``disk_findings`` does)."""
    return tuple(f for f in findings if f.rule != "host-disk")
