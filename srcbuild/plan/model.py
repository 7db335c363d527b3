"""The plan model: an ordered tuple of steps, each with a stable id, a title and why it runs.

A step either runs ``Command``s (argv, cwd, environment changes, why) or carries a typed action
(``srcbuild.plan.actions``: preflight checks, the stale-build-tree check, verification, caching)
that describes itself (text, JSON, the equivalent shell lines, so ``srcbuild plan --format shell``
stays a script a user can run by hand) and runs itself.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.findings import Finding
from srcbuild.plan.actions import Action, SkipCondition
from srcbuild.records import record
from srcbuild.resolve.model import Setting

if TYPE_CHECKING:
    from srcbuild.resolve.compiler import AlternativesTree


def settings_hash(cmake_settings: tuple[tuple[str, str], ...]) -> str:
    """A hash of the settings that reach CMake: a build tree configured with others is stale."""
    blob = json.dumps(sorted(cmake_settings)).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def logs_dir(build_root: Path) -> Path:
    """Where the steps of a plan working in ``build_root`` write their logs."""
    return build_root / "logs"


def step_log(logs: Path, index: int, step_id: str) -> Path:
    """The log file of the ``index``-th step (from 1) of a plan: ``logs/03-build.log``."""
    return logs / f"{index:02d}-{step_id}.log"


@record
class Step:
    """One step of a build: commands to run, an internal action, or an action that decides which of
    its commands run (``action.runs_commands``: the sources step).

    ``skip_if`` is a condition the executor checks first (``PatchesApplied``): a step whose work
    is already on disk is skipped and recorded as such.
    """

    id: str
    title: str
    why: str
    commands: tuple[Command, ...] = ()
    action: Action | None = None
    progress: bool = False  # show a progress bar from ninja's [n/N] lines
    on_failure: tuple[Command, ...] = ()  # cleanup run when the step fails (unless --keep-build)
    skip_if: SkipCondition | None = None
    # the step writes files into the checkout: what it leaves there is the build's, and anything
    # else that appears between such steps is a local modification (srcbuild.sources.written)
    writes_checkout: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "why": self.why,
            "commands": [c.to_json() for c in self.commands],
            "action": self.action.to_json() if self.action else None,
            "on_failure": [c.to_json() for c in self.on_failure],
            "skip_if": self.skip_if.name if self.skip_if else None,
            **({"writes_checkout": True} if self.writes_checkout else {}),
        }


@record
class Plan:
    """Everything a build will do, in order; the executor runs exactly this object."""

    package: str  # a package of srcbuild.packages: "torch", "torchvision", "torchaudio"
    recipe: str
    version: str  # the wheel version the build produces, e.g. "1.7.1+cu92.sm30"
    settings: tuple[Setting, ...]
    steps: tuple[Step, ...]
    env: EnvChanges  # the build variables (also carried by the build command)
    checkout: Path
    build_root: Path  # state.json, logs and the settings hash live here
    dist_dir: Path  # where setup.py writes the wheel
    cmake_settings: tuple[tuple[str, str], ...] = ()  # what reaches CMake
    cmake_settings_hash: str = ""  # their settings_hash, as the build-tree step compares it
    keep_build: bool = False
    system_alternatives: bool = False
    findings: tuple[Finding, ...] = ()  # the resolved build's rule and host findings
    # about how much free disk the build needs (named when a filesystem fills during it); 0: unknown
    disk_need_bytes: int = field(default=0, compare=False)
    # the command that continues this build after an interrupt or a failure ("" : srcbuild PACKAGE
    # --recipe RECIPE --resume, the torch/torchvision form)
    continue_command: str = field(default="", compare=False)
    # the update-alternatives tree the build selects its gcc in (``--format shell`` restores a system one)
    compiler_tree: AlternativesTree | None = field(default=None, compare=False, repr=False)

    @property
    def resume_command(self) -> str:
        return self.continue_command or f"srcbuild {self.package} --recipe {self.recipe} --resume"

    @property
    def state_path(self) -> Path:
        return self.build_root / "state.json"

    @property
    def logs_dir(self) -> Path:
        return logs_dir(self.build_root)

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    @property
    def step_ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.steps)

    def fingerprint(self) -> str:
        """A hash of the whole plan: a resumed build must be resuming this same plan."""
        data = self.to_json()
        del data["findings"]  # host findings (free disk) change between runs of the same plan
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "recipe": self.recipe,
            "version": self.version,
            "checkout": str(self.checkout),
            "build_root": str(self.build_root),
            "dist_dir": str(self.dist_dir),
            "settings": [s.to_json() for s in self.settings],
            "build_env": self.env.to_json(),
            "cmake_settings_hash": self.cmake_settings_hash,
            "findings": [f.to_json() for f in self.findings],
            "steps": [s.to_json() for s in self.steps],
        }


__all__ = ["Action", "Plan", "Setting", "SkipCondition", "Step", "settings_hash"]
