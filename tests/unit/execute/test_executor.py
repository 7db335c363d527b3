"""The executor's bookkeeping on plans of internal actions: state, resume, failure, interruption."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from rich.console import Console

from srcbuild.envmods import EnvChanges
from srcbuild.errors import Interrupted, StepFailed, UsageError
from srcbuild.execute.executor import Executor
from srcbuild.execute.runner import Runner
from srcbuild.execute.state import BuildState
from srcbuild.plan.actions import Action, SkipCondition
from srcbuild.plan.model import Plan, Step


def _plan(tmp_path: Path, *steps: Step) -> Plan:
    return Plan(
        package="torch",
        recipe="r",
        version="1.0+cpu",
        settings=(),
        steps=steps,
        env=EnvChanges(),
        checkout=tmp_path / "src",
        build_root=tmp_path / "builds" / "r-torch",
        dist_dir=tmp_path / "src" / "dist",
    )


class Recorder:
    def __init__(self, fail: str | None = None, interrupt: str | None = None) -> None:
        self.ran: list[str] = []
        self.fail, self.interrupt = fail, interrupt

    def __call__(self, ex: Executor, step: Step) -> None:
        self.ran.append(step.id)
        if step.id == self.fail:
            raise StepFailed(f"step {step.id} failed", "fix it")
        if step.id == self.interrupt:
            raise KeyboardInterrupt


@dataclass(frozen=True)
class Record(Action):
    """A test action: tells the recorder of the running executor that its step ran."""

    name: ClassVar[str] = "record"
    label: str

    def describe(self) -> str:
        return self.label


def _record(ex: Runner, action: Action, step: Step, log: Path) -> None:
    ex.context(ex, step)


@dataclass(frozen=True)
class Already(SkipCondition):
    name: ClassVar[str] = "already"
    reason: ClassVar[str] = "it was done already"


# the test actions' handlers, as srcbuild.execute.registry maps srcbuild's own
HANDLERS = {Record: _record}
SKIP_CHECKS = {Already: lambda ex, condition: True}


def _step(step_id: str, skip_if: SkipCondition | None = None) -> Step:
    return Step(step_id, f"step {step_id}", "why", action=Record(step_id), skip_if=skip_if)


def _run(plan: Plan, rec: Recorder, resume: bool = False) -> Executor:
    ex = Executor(
        plan,
        console=Console(file=io.StringIO()),
        environ={},
        resume=resume,
        context=rec,
        handlers=HANDLERS,
        skip_checks=SKIP_CHECKS,
    )
    ex.run()
    return ex


def test_runs_every_step_and_records_state(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _step("a"), _step("b"))
    rec = Recorder()
    ex = _run(plan, rec)
    assert rec.ran == ["a", "b"]
    assert [o.status for o in ex.result.outcomes] == ["done", "done"]
    state = BuildState.load(plan.state_path)
    assert state is not None and {k: v.status for k, v in state.steps.items()} == {"a": "done", "b": "done"}


def test_resume_starts_at_the_failed_step(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _step("a"), _step("b"), _step("c"))
    with pytest.raises(StepFailed):
        _run(plan, Recorder(fail="b"))
    rec = Recorder()
    ex = _run(plan, rec, resume=True)
    assert rec.ran == ["b", "c"]
    assert [o.status for o in ex.result.outcomes] == ["resumed", "done", "done"]


def test_a_changed_step_runs_again_on_resume(tmp_path: Path) -> None:
    with pytest.raises(StepFailed):
        _run(_plan(tmp_path, _step("a"), _step("b")), Recorder(fail="b"))
    changed = Step("a", "step a", "why", action=Record("a, differently"))
    rec = Recorder()
    _run(_plan(tmp_path, changed, _step("b")), rec, resume=True)
    assert rec.ran == ["a", "b"]


def test_ctrl_c_marks_the_step_interrupted(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _step("a"), _step("b"))
    with pytest.raises(Interrupted) as err:
        _run(plan, Recorder(interrupt="b"))
    assert err.value.message.startswith("interrupted during step b; the build tree and the log (")
    assert err.value.hint == "continue with: srcbuild torch --recipe r --resume"
    state = BuildState.load(plan.state_path)
    assert state is not None and state.steps["b"].status == "interrupted"


def test_resume_without_state_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        _run(_plan(tmp_path, _step("a")), Recorder(), resume=True)
    assert err.value.message.startswith("there is no build of torch for recipe r to resume (no ")
    assert err.value.hint == "run the same command without --resume"


def test_skip_condition(tmp_path: Path) -> None:
    rec = Recorder()
    ex = _run(_plan(tmp_path, _step("a", skip_if=Already())), rec)
    assert rec.ran == [] and ex.result.outcomes[0].status == "skipped"


def test_finalizers_run_on_failure(tmp_path: Path) -> None:
    calls: list[str] = []
    ex = Executor(
        _plan(tmp_path, _step("a")),
        console=Console(file=io.StringIO()),
        environ={},
        context=Recorder(fail="a"),
        handlers=HANDLERS,
    )
    ex.finalizers.append(lambda: calls.append("restored"))
    with pytest.raises(StepFailed):
        ex.run()
    assert calls == ["restored"]


@dataclass(frozen=True)
class RunsItsCommands(Record):
    runs_commands: ClassVar[bool] = True


def test_an_action_that_runs_its_commands_decides_which_run(tmp_path: Path) -> None:
    from srcbuild.command import Command

    cmds = (Command(("false",), "never run here"), Command(("false",), "nor this"))
    step = Step("sources", "Sources", "why", commands=cmds, action=RunsItsCommands("sources"))
    rec = Recorder()
    ex = _run(_plan(tmp_path, step), rec)
    assert rec.ran == ["sources"]  # the action ran; the executor ran none of the commands itself
    assert [o.status for o in ex.result.outcomes] == ["done"]


def test_steps_after_one_that_ran_again_run_again_on_resume(tmp_path: Path) -> None:
    with pytest.raises(StepFailed):
        _run(_plan(tmp_path, _step("a"), _step("b"), _step("c")), Recorder(fail="c"))
    changed = Step("a", "step a", "why", action=Record("a, differently"))
    rec = Recorder()
    out = io.StringIO()
    plan = _plan(tmp_path, changed, _step("b"), _step("c"))
    Executor(
        plan, console=Console(file=out, width=200), environ={}, resume=True, context=rec, handlers=HANDLERS
    ).run()
    assert rec.ran == ["a", "b", "c"]  # b was done, but a (say, install-torch) may have undone it
    assert "    done in an earlier run; runs again because step a ran before it" in out.getvalue()
