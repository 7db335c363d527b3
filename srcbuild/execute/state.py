"""Per-step build state, persisted as JSON in the build's work dir so ``--resume`` can re-enter.

Each step records its status (done, failed, interrupted, skipped) and a hash of the step as
planned. A resumed build skips a step only when it is done *and* planned identically; anything
changed runs again.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srcbuild.files import write_atomic
from srcbuild.plan.model import Plan, Step

DONE, FAILED, INTERRUPTED, SKIPPED, RUNNING = "done", "failed", "interrupted", "skipped", "running"


def step_hash(step: Step) -> str:
    return hashlib.sha256(json.dumps(step.to_json(), sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class StepRecord:
    status: str
    hash: str
    started: float = 0.0
    ended: float = 0.0
    log: str = ""
    record: dict[str, Any] | None = None  # what the step's handler found (execute.records), for --resume


@dataclass
class BuildState:
    """What happened to each step of a plan, as stored in ``state.json``."""

    package: str
    recipe: str
    plan: str  # Plan.fingerprint()
    steps: dict[str, StepRecord] = field(default_factory=dict)

    @classmethod
    def fresh(cls, plan: Plan) -> BuildState:
        return cls(package=plan.package, recipe=plan.recipe, plan=plan.fingerprint())

    @classmethod
    def load(cls, path: Path) -> BuildState | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            steps = {k: StepRecord(**v) for k, v in data["steps"].items()}
            return cls(package=data["package"], recipe=data["recipe"], plan=data["plan"], steps=steps)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(self.to_json(), indent=2) + "\n")

    def is_done(self, step: Step) -> bool:
        rec = self.steps.get(step.id)
        return rec is not None and rec.status in (DONE, SKIPPED) and rec.hash == step_hash(step)

    def mark(self, step: Step, status: str, log: Path | None = None, record: dict[str, Any] | None = None) -> None:
        rec = self.steps.get(step.id)
        now = time.time()
        if rec is None or status == RUNNING:
            rec = StepRecord(status=status, hash=step_hash(step), started=now)
        rec.status = status
        rec.hash = step_hash(step)
        if status != RUNNING:
            rec.ended = now
        if log is not None:
            rec.log = str(log)
        if status == RUNNING or record is not None:
            rec.record = record
        self.steps[step.id] = rec

    def to_json(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "recipe": self.recipe,
            "plan": self.plan,
            "steps": {k: vars(v) for k, v in self.steps.items()},
        }
