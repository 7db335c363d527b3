"""The canary step when a build runs: configure, read back, compile a few units, time it all.

The configure is torch's own (``setup.py build --cmake-only`` in the era's data), run like any
build command: its output goes to the step's log, and a failure is diagnosed as a build failure
is (the log's last lines, the matching signatures, ``--resume`` to continue from here). Then
``CMakeCache.txt``, the configure summary and ``build.ninja`` are read back
(``srcbuild.canary.readout``) and every difference from the plan stops the build with exit 5,
one line each; then each canary unit is built through its own ninja target and its object read
with srcbuild's fat-binary reader. Wall and CPU seconds (user + system of everything it ran) are
printed and recorded; the long build continues in the same tree.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

from srcbuild.canary.readout import Readout, arch_text, compare, device_code_missing, find_output
from srcbuild.command import Command
from srcbuild.errors import StepFailed
from srcbuild.execute.records import CanaryChecked
from srcbuild.execute.runner import Runner
from srcbuild.plan.actions import Canary
from srcbuild.plan.model import Step


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


SUMMARY_FILE = "srcbuild-configure-summary.txt"  # in the build tree: `setup.py clean` removes both


def _size(path: Path) -> int:
    return len(_read(path))


def _summary_lines(text: str) -> list[str]:
    """The ``-- ...`` status lines of one configure's output."""
    return [line for line in text.splitlines() if line.startswith("-- ")]


def _realpath(path: str) -> str:
    return os.path.realpath(path)


def canary(ex: Runner, action: Canary, step: Step, log: Path) -> CanaryChecked:
    if action.skip or action.configure is None:
        ex.console.print(f"    canary skipped: {action.skip}", markup=False, highlight=False)
        skipped = CanaryChecked(skipped=action.skip or "no configure command")
        ex.result.canary = skipped.fields()
        return skipped
    wall0, cpu0 = time.monotonic(), _cpu()
    tree = action.build_dir
    start = _size(log)
    ex.run_command(step, action.configure, log)
    summary = _summary_lines(_read(log)[start:])
    kept = tree / SUMMARY_FILE
    if not summary and not kept.is_file() and action.reconfigure is not None:
        start = _size(log)  # an existing tree configured without srcbuild keeping its summary
        ex.run_command(step, action.reconfigure, log)
        summary = _summary_lines(_read(log)[start:])
    if summary and tree.is_dir():
        kept.write_text("\n".join(summary) + "\n", encoding="utf-8")
    elif kept.is_file():
        ex.console.print(f"    the tree was configured earlier: its summary is read from {kept}", markup=False,
                         highlight=False)
        summary = _read(kept).splitlines()
    cache, ninja = tree / "CMakeCache.txt", tree / "build.ninja"
    if not cache.is_file() or not ninja.is_file():
        raise StepFailed(
            f"the canary's configure left no {cache if not cache.is_file() else ninja}; configure log: {log}",
            "read the log's first error; then rerun with --resume to continue from this step",
        )
    readout = Readout.read(_read(cache), summary, _read(ninja))
    checked, bad = compare(action.expects, readout, _realpath)
    for item in checked:
        mark = "ok" if item.ok else "MISMATCH"
        ex.console.print(f"    {mark:8} {item.label}: {item.cmake} ({item.where})", markup=False, highlight=False)
    for where in ("cache:MPI_C_COMPILER", "cache:MPIEXEC_EXECUTABLE"):
        found = readout.value(where)
        if found:
            ex.console.print(f"    {'':8} MPI: {found} ({where})", markup=False, highlight=False)
    if bad:
        for m in bad:
            ex.console.print(f"canary: {m.line()}", markup=False, highlight=False)
        first = bad[0]
        more = f" (and {len(bad) - 1} more above)" if len(bad) > 1 else ""
        raise StepFailed(
            f"canary: {first.line()}{more}; configure log: {log}",
            f"make CMake find the plan's {first.label} (or change the recipe's {_origin(action, first.key)}); "
            "then rerun with --resume to continue from this step",
        )
    units = []
    for unit in action.units:
        target = find_output(readout.outputs, unit.outputs)
        if target is None:
            raise StepFailed(
                f"canary: none of {', '.join(unit.outputs)} is a target of {ninja} ({unit.why})",
                "the torch tree differs from its era's row in srcbuild/knowledge/data/canary.toml; "
                "skip the canary with --no-canary and report it",
            )
        build = Command(("ninja", "-C", str(tree), target), f"canary: {unit.why}", cwd=tree)
        ex.run_command(step, build, log)
        units.append(_read_unit(ex, action, unit.device, target, tree / target))
    wall, cpu = time.monotonic() - wall0, _cpu() - cpu0
    ex.console.print(f"    canary passed in {wall:.0f} s wall, {cpu:.0f} s CPU; the build continues in {tree}",
                     markup=False, highlight=False)
    passed = CanaryChecked("", wall, cpu, tuple(c.to_json() for c in checked), tuple(units))
    ex.result.canary = passed.fields()
    return passed


def _origin(action: Canary, key: str) -> str:
    return next((e.origin for e in action.expects if e.key == key), "settings") or "settings"


def _read_unit(ex: Runner, action: Canary, device: bool, target: str, obj: Path) -> dict[str, object]:
    from srcbuild.verify.fatbin import scan_elf
    from srcbuild.verify.kernels import Kernels

    if not obj.is_file():
        raise StepFailed(f"canary: ninja built {target} but {obj} is not there", "rerun with --debug and report it")
    kernels = Kernels.from_entries(scan_elf(obj)) if device else Kernels()
    shown = arch_text(kernels.sass, kernels.ptx)
    ex.console.print(f"    {'ok':8} {target}: {shown if device else 'compiled'}", markup=False, highlight=False)
    if device and action.arch_list:
        missing = device_code_missing(action.arch_list, kernels.sass, kernels.ptx)
        if missing:
            raise StepFailed(
                f"canary: {obj} holds {shown}, not {' '.join(missing)} of TORCH_CUDA_ARCH_LIST={action.arch_list}",
                "the CUDA compile lines lack these archs: read the -gencode flags in build/build.ninja; "
                "then rerun with --resume to continue from this step",
            )
    return {"target": target, "object": str(obj), "sass": sorted(kernels.sass), "ptx": sorted(kernels.ptx)}
