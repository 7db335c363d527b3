"""``srcbuild smoke``: install a wheel into a throwaway venv and run it — on the GPU when there is one.

``plan_smoke`` turns a recipe and wheel paths into a ``SmokePlan`` (what to create, install and
run, each a ``Command``); ``run_smoke`` executes it through ``srcbuild.proc`` and returns a
``SmokeReport``. The checks run inside the venv's interpreter (``smoke_checks.py``, a script, not
imported by srcbuild) and print one ``SMOKE {json}`` line each:

* always: import torch, a matmul compared with a float64 reference (CPU);
* with a GPU: ``torch.cuda.get_arch_list()`` and the device's capability, a kernel launch, the
  matmul on the GPU compared with the CPU result and timed against it, a cuDNN convolution
  (recipe with cuDNN), torchvision's ``nms`` on CUDA (a torchvision wheel given);
* without a GPU the GPU checks are reported as skipped ("no GPU") and torchvision's ``nms`` runs on
  the CPU;
* with MPI: ``torch.distributed.is_mpi_available()`` and a two-rank ``mpirun`` all-reduce through the
  ``mpi`` backend (torch-build.md §2 explains why it can be missing).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Optional, TextIO

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.errors import EnvironmentError_, HostError
from srcbuild.recipe import Recipe
from srcbuild.records import record

CHECKS_SCRIPT = Path(__file__).with_name("smoke_checks.py")


@record
class SmokeCheck:
    name: str
    status: str  # "pass" | "fail" | "skipped"
    detail: str
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "seconds": self.seconds}


@record
class SmokePlan:
    """Everything ``run_smoke`` does, decided up front."""

    recipe: str
    venv: Path
    keep_venv: bool
    wheels: tuple[Path, ...]
    commands: tuple[Command, ...]  # create (maybe), install, checks, then mpirun (maybe)
    mpi: bool


@record
class SmokeReport:
    recipe: str
    checks: tuple[SmokeCheck, ...]
    log: Optional[Path] = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks) and bool(self.checks)

    @property
    def gpu(self) -> bool:
        return any(c.name == "kernel-launch" and c.status != "skipped" for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "ok": self.ok,
            "gpu": self.gpu,
            "checks": [c.to_json() for c in self.checks],
            "log": str(self.log) if self.log else None,
        }


def find_python(recipe: Recipe, python: Optional[str]) -> str:
    """``--python`` as given, else ``python<major.minor>`` of the recipe on PATH."""
    if python:
        return python
    name = f"python{recipe.toolchain.python}"
    found = shutil.which(name)
    if found is None:
        raise HostError(
            f"smoke: {name} (toolchain.python of {recipe.name}) is not on PATH",
            f"pass --python PATH to a Python {recipe.toolchain.python} interpreter",
        )
    return found


def plan_smoke(
    recipe: Recipe,
    wheels: Sequence[Path],
    python: str,
    venv: Path,
    keep_venv: bool,
    mpirun: Optional[str] = None,
    openmpi: bool = True,
    as_root: bool = False,
    installed: bool = False,
) -> SmokePlan:
    """The commands of a smoke test; ``mpirun`` is needed only when the recipe enables MPI.

    ``installed``: ``venv`` is an environment that already holds torch (``smoke --env``); nothing is
    created or installed, and torchvision's check runs when torchvision imports there."""
    vpy = str(venv / "bin" / "python")
    torchvision: Optional[bool] = None if installed else any(w.name.startswith("torchvision-") for w in wheels)
    cfg = {
        "archs": [f"sm_{cc.sm}" for cc in recipe.gpu.arch],
        "cudnn": recipe.toolchain.cudnn is not None and recipe.toolchain.cuda is not None,
        "torchvision": torchvision,
        "mpi": recipe.mpi.enabled,
    }
    commands = []
    if not installed and not (venv / "bin" / "python").exists():
        commands.append(Command((python, "-m", "venv", str(venv)), "create the throwaway environment"))
    if not installed:
        install = (vpy, "-m", "pip", "install", "--disable-pip-version-check", *(str(w) for w in wheels))
        commands.append(Command(install, "install the wheel and its dependencies"))
    commands.append(Command((vpy, str(CHECKS_SCRIPT), "checks", json.dumps(cfg)), "run the checks"))
    if recipe.mpi.enabled and mpirun:
        env = EnvChanges()
        if as_root:  # Open MPI refuses root without these (feasibility.md §5)
            env = env.set("OMPI_ALLOW_RUN_AS_ROOT", "1", "smoke").set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", "smoke")
        mode = (vpy, str(CHECKS_SCRIPT), "allreduce")
        argv = (mpirun, "-np", "2", *(("--oversubscribe",) if openmpi else ()), *mode)
        commands.append(Command(argv, "two-rank all_reduce through the mpi backend", env=env))
    return SmokePlan(recipe.name, venv, keep_venv, tuple(wheels), tuple(commands), recipe.mpi.enabled)


def _parse(lines: Sequence[str]) -> list[SmokeCheck]:
    checks = []
    for line in lines:
        if line.startswith("SMOKE "):
            try:
                data = json.loads(line[len("SMOKE ") :])
                checks.append(SmokeCheck(data["name"], data["status"], data["detail"], data["seconds"]))
            except (ValueError, KeyError, TypeError):  # a report the interpreter garbled: a failed check
                checks.append(SmokeCheck("report", "fail", f"unreadable report line: {line[:120]}", 0.0))
    return checks


def _last_error(lines: Sequence[str]) -> str:
    errors = [line.strip() for line in lines if "Error" in line or "error" in line]
    return errors[-1] if errors else (lines[-1].strip() if lines else "no output")


def run_smoke(
    plan: SmokePlan,
    base_env: Mapping[str, str],
    log: Path,
    echo: Optional[TextIO] = None,
    then: Optional[Callable[[], Sequence[SmokeCheck]]] = None,
) -> SmokeReport:
    """Run the plan; a failed install raises ``EnvironmentError_``, failed checks are in the report.
    ``then`` runs more checks with the venv before it is removed (``smoke --ddp``)."""
    checks: list[SmokeCheck] = []
    try:
        for command in plan.commands:
            lines: list[str] = []
            result = proc.run(
                command.argv, env=command.env.apply(base_env), log_path=log, on_line=lines.append, echo=echo
            )
            found = _parse(lines)
            checks += found
            if command.why.startswith("two-rank") and not found:
                checks.append(SmokeCheck("mpi-allreduce", "fail", _last_error(lines)))
            elif not result.ok and not found:
                raise EnvironmentError_(
                    f"smoke: `{command.why}` failed (exit {result.returncode}): {_last_error(lines)}",
                    f"see the log {log}",
                )
        if plan.mpi and not any(c.name == "mpi-allreduce" for c in checks):
            checks.append(SmokeCheck("mpi-allreduce", "fail", "mpirun is not on PATH"))
        if then is not None:
            checks += then()
    finally:
        if not plan.keep_venv and plan.venv.exists():
            shutil.rmtree(plan.venv, ignore_errors=True)
    return SmokeReport(plan.recipe, tuple(checks), log)


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
