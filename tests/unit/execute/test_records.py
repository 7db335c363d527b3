"""Step records: what a handler found is handed to later steps, kept in the state file, and read
back from it by a ``--resume`` that skips the step that found it."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from rich.console import Console

from srcbuild.compiler_cache.model import CacheStats
from srcbuild.envmods import EnvChanges
from srcbuild.errors import StepFailed
from srcbuild.execute.executor import Executor
from srcbuild.execute.records import (
    CanaryChecked,
    CompilerCacheCounted,
    CompilerCacheStarted,
    Done,
    LocalChangesFound,
    PreflightPassed,
    Record,
    SourcesChecked,
    TorchBuilt,
    TorchWheelCopied,
    WheelStored,
    WheelVerified,
)
from srcbuild.execute.runner import Runner
from srcbuild.plan.actions import Action
from srcbuild.plan.model import Plan, Step
from srcbuild.sources.localdiff import LocalChanges

EXAMPLES: list[Record] = [
    Done(),
    PreflightPassed(2),
    TorchBuilt(Path("/c/torch-2.0.1-cp310-cp310-linux_x86_64.whl")),
    TorchWheelCopied(Path("/c/torch.whl"), Path("/b/torch-wheel/torch.whl")),
    SourcesChecked("a" * 40, (("third_party/fmt", "b" * 40), ("third_party/gloo", "c" * 40))),
    LocalChangesFound(LocalChanges(("setup.py",), "d" * 64)),
    CompilerCacheStarted(CacheStats("sccache", 3, 4, 7, 1, "local disk")),
    CompilerCacheCounted(CacheStats("ccache", 10, 0)),
    WheelVerified(Path("/d/torch.whl"), (35, 37), (37,)),
    WheelStored(Path("/c/ab/torch.whl")),
    CanaryChecked(
        "", 61.5, 40.25,
        ({"key": "mpi", "label": "USE_MPI", "plan": "ON", "cmake": "ON", "where": "summary:USE_MPI", "ok": True},),
        ({"target": "a/FillKernel.cu.o", "object": "/b/a/FillKernel.cu.o", "sass": [37], "ptx": []},),
    ),
    CanaryChecked("--no-canary"),
]


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: r.kind)
def test_every_record_reads_back_from_its_json(record: Record) -> None:
    assert Record.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_every_record_kind_has_an_example() -> None:
    kinds = {cls.kind for cls in Record.__subclasses__() if cls.__module__ == "srcbuild.execute.records"}
    assert kinds == {r.kind for r in EXAMPLES}


def test_a_record_that_does_not_read_back_is_none() -> None:
    assert Record.from_json({"kind": "sources-checked", "commit": "a"}) is None  # no submodules
    assert Record.from_json({"kind": "no-such-record"}) is None


@dataclass(frozen=True)
class Measure(Action):
    """A test action whose handler measures a commit."""

    name: ClassVar[str] = "measure"

    def describe(self) -> str:
        return "measure"


@dataclass(frozen=True)
class Use(Action):
    """A test action whose handler reads the measured commit (and fails the first time)."""

    name: ClassVar[str] = "use"

    def describe(self) -> str:
        return "use"


class Calls:
    def __init__(self, fail: bool) -> None:
        self.measured = 0
        self.seen: list[str | None] = []
        self.fail = fail


def _measure(ex: Runner, action: Action, step: Step, log: Path) -> Record:
    ex.context.measured += 1
    return SourcesChecked("e" * 40, (("sub", "f" * 40),))


def _use(ex: Runner, action: Action, step: Step, log: Path) -> Record:
    found = ex.records.get(SourcesChecked)
    ex.context.seen.append(found.commit if found is not None else None)
    if ex.context.fail:
        raise StepFailed("use failed", "fix it")
    return Done()


def test_resume_reads_an_earlier_steps_record_from_the_state_file(tmp_path: Path) -> None:
    plan = Plan(
        package="torch",
        recipe="r",
        version="1.0",
        settings=(),
        steps=(Step("measure", "measure", "why", action=Measure()), Step("use", "use", "why", action=Use())),
        env=EnvChanges(),
        checkout=tmp_path / "src",
        build_root=tmp_path / "build",
        dist_dir=tmp_path / "dist",
    )
    handlers = {Measure: _measure, Use: _use}

    def run(calls: Calls, resume: bool) -> None:
        Executor(
            plan, console=Console(file=io.StringIO()), environ={}, resume=resume, context=calls, handlers=handlers
        ).run()

    first = Calls(fail=True)
    with pytest.raises(StepFailed):
        run(first, resume=False)
    assert first.measured == 1 and first.seen == ["e" * 40]
    stored = json.loads(plan.state_path.read_text())["steps"]["measure"]["record"]
    assert stored == {"kind": "sources-checked", "commit": "e" * 40, "submodules": {"sub": "f" * 40}}

    resumed = Calls(fail=False)
    run(resumed, resume=True)
    assert resumed.measured == 0  # not measured again: read from the state file
    assert resumed.seen == ["e" * 40]
