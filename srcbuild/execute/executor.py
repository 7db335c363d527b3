"""The executor: walks a ``Plan`` step by step, recording each step's state for ``--resume``.

Commands go through ``srcbuild.proc`` (one log file per step, the whole process group killed on
Ctrl-C); a step's typed action (``srcbuild.plan.actions``, plain data) is done by the handler its
type maps to (``srcbuild.execute.registry``). A step whose commands can partly be done already
(the sources step) has an action whose handler runs them (``runs_commands``): it decides which
still run, says why the others are skipped, and explains their failures. On a failed step the
log's last lines and the matching failure signatures are printed and ``StepFailed`` carries the log
path. The build tree of a failed (or interrupted) step is kept as it is, so that ``--resume``
continues it and ninja rebuilds only what is left; a new build without ``--resume`` (and without
``--keep-build``) starts from the step's cleanup instead (``check_build_tree`` reads
``previous``, the state the last run left), and changed settings always clean.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.console import SETTINGS as console_settings
from srcbuild.console import Verbosity, clip_words, wrap_line
from srcbuild.errors import DiskFull, Interrupted, SrcbuildError, StepFailed, UsageError, filesystem_of
from srcbuild.execute.context import BuildContext
from srcbuild.execute.diagnose import DISK_FULL, Diagnosis, diagnose, first_error, signal_of
from srcbuild.execute.progress import Heartbeat, NinjaProgress
from srcbuild.execute.records import Record, Records
from srcbuild.execute.registry import HANDLERS, SKIP_CHECKS, Handler, SkipCheck, handler_for, skip_check_for
from srcbuild.execute.result import BuildResult, StepOutcome
from srcbuild.execute.state import DONE, FAILED, INTERRUPTED, RUNNING, SKIPPED, BuildState
from srcbuild.execute.steplog import tee_console
from srcbuild.plan.actions import Action, SkipCondition
from srcbuild.plan.model import Plan, Step, step_log
from srcbuild.resolve.variables import NOT_INHERITED
from srcbuild.sources import written

TAIL_LINES = 25


class Executor:
    """Runs one plan: each step's skip condition, then its action and commands, in order."""

    def __init__(
        self,
        plan: Plan,
        *,
        console: Console,
        environ: Mapping[str, str],
        resume: bool = False,
        context: BuildContext | None = None,
        handlers: Mapping[type[Action], Handler] | None = None,
        skip_checks: Mapping[type[SkipCondition], SkipCheck] | None = None,
    ) -> None:
        self.plan = plan
        self.handlers = dict(HANDLERS if handlers is None else handlers)
        self.skip_checks = dict(SKIP_CHECKS if skip_checks is None else skip_checks)
        self.console = console
        self.environ = dict(environ)
        self.resume = resume
        self.context = context
        self.result = BuildResult(plan)
        self.records = Records()  # what the steps found, read by later steps (execute.records)
        self.previous = None if resume else BuildState.load(plan.state_path)  # what the last run left
        self.state = self._initial_state()
        self.finalizers: list[Callable[[], None]] = []  # callables run at the end, also on failure (compiler restore)
        self._first_run: str | None = None  # the first step this run executed (not resumed, not skipped)
        self._next = 0  # the index of the next step to run

    def _initial_state(self) -> BuildState:
        if not self.resume:
            return BuildState.fresh(self.plan)
        state = BuildState.load(self.plan.state_path)
        if state is None:
            raise UsageError(
                f"there is no build of {self.plan.package} for recipe {self.plan.recipe} to resume "
                f"(no {self.plan.state_path})",
                "run the same command without --resume",
            )
        return state

    def log_path(self, index: int, step: Step) -> Path:
        return step_log(self.plan.logs_dir, index, step.id)

    def run(self) -> BuildResult:
        """Run every step of the plan, in order; the finalizers run at the end, also on failure."""
        with self.running():
            self.run_steps()
        return self.result

    @contextmanager
    def running(self) -> Iterator[BuildResult]:
        """A run in parts (``run_steps`` up to a step, then the rest): the old logs go first
        (unless ``--resume``); the finalizers run when the block ends, also on failure."""
        if not self.resume and self.plan.logs_dir.exists():
            for old in self.plan.logs_dir.glob("*.log"):
                old.unlink()
        try:
            yield self.result
        finally:
            for finalize in reversed(self.finalizers):
                finalize()

    def run_steps(self, until: str | None = None) -> None:
        """Run the steps not run yet, in order, stopping before step ``until`` (None: to the end)."""
        while self._next < len(self.plan.steps):
            step = self.plan.steps[self._next]
            if step.id == until:
                return
            self._next += 1
            self._run_step(self._next, step)

    def pending(self, step_id: str) -> bool:
        """Whether step ``step_id``, run next, would do its work (False: done in an earlier run and
        resumed, because no step before it ran again in this one)."""
        step = self.plan.step(step_id)
        return not (self.resume and self.state.is_done(step) and self._first_run is None)

    def _run_step(self, index: int, step: Step) -> None:
        total = len(self.plan.steps)
        # A step done in an earlier run is skipped, unless an earlier step ran again in this one:
        # what it did (a new environment, a reinstalled torch) may have undone the later step's work.
        if self.resume and self.state.is_done(step) and self._first_run is None:
            self.console.print(f"[dim]==> [{index}/{total}] {step.title}: done in an earlier run[/dim]")
            stored = self.state.steps[step.id].record
            found = Record.from_json(stored) if stored is not None else None
            if found is not None:  # what it found then, read from the state file
                self.records.add(found)
            self.result.outcomes.append(StepOutcome(step.id, "resumed", 0.0))
            return
        log = self.log_path(index, step)
        self.console.print(f"[bold]==> [{index}/{total}] {step.title}[/bold]")
        self.console.print(f"[dim]    log: {log}[/dim]", highlight=False)
        if self.resume and self.state.is_done(step):
            self.console.print(f"    done in an earlier run; runs again because step {self._first_run} ran before it")
        with tee_console(self.console, log, f"==> [{index}/{total}] {step.title}"):
            self._run_started_step(step, log)

    def _run_started_step(self, step: Step, log: Path) -> None:
        started = time.monotonic()
        if step.skip_if is not None and skip_check_for(step.skip_if, self.skip_checks)(self, step.skip_if):
            self.console.print(f"    skipped: {step.skip_if.reason}")
            self.state.mark(step, SKIPPED)
            self._save()
            self.result.outcomes.append(StepOutcome(step.id, "skipped", 0.0))
            return
        if self._first_run is None:
            self._first_run = step.id
        self.state.mark(step, RUNNING, log)
        self._save()
        if step.writes_checkout:  # what appeared since the last such step is not the build's
            written.before_writing(self.plan.checkout, self.environ)
        try:
            self._run_action_and_commands(step, log, started)
        finally:
            if step.writes_checkout:  # what it left is the build's, also when it failed
                written.after_writing(self.plan.checkout, self.environ)

    def _run_action_and_commands(self, step: Step, log: Path, started: float) -> None:
        record: Record | None = None
        try:
            if step.action is not None:
                record = handler_for(step.action, self.handlers)(self, step.action, step, log)
                if record is not None:
                    self.records.add(record)
            if step.action is None or not step.action.runs_commands:
                for cmd in step.commands:
                    self.run_command(step, cmd, log)
        except (Interrupted, KeyboardInterrupt):
            self.state.mark(step, INTERRUPTED, log)
            self._save()
            self.result.outcomes.append(StepOutcome(step.id, "interrupted", time.monotonic() - started, str(log)))
            raise Interrupted(
                f"interrupted{proc.stopped_by()} during step {step.id}; the build tree and the log ({log}) are kept",
                f"continue with: {self.plan.resume_command}",
            ) from None
        except SrcbuildError as exc:
            with log.open("a", encoding="utf-8", errors="replace") as handle:  # the failure, in its log too
                handle.write(f"error: {exc.message}\n" + (f"hint: {exc.hint}\n" if exc.hint else ""))
            self.state.mark(step, FAILED, log)
            self._save()
            self.result.outcomes.append(StepOutcome(step.id, "failed", time.monotonic() - started, str(log)))
            raise
        self.state.mark(step, DONE, log, record.to_json() if record is not None else None)
        self._save()
        self.result.outcomes.append(StepOutcome(step.id, "done", time.monotonic() - started, str(log)))

    def command_env(self, cmd: Command) -> dict[str, str]:
        return cmd.env.apply(self.environ)

    def run_command(
        self,
        step: Step,
        cmd: Command,
        log: Path,
        explain: Callable[[Command, proc.RunResult], SrcbuildError] | None = None,
    ) -> None:
        """Run one command of ``step``; on failure raise ``explain(cmd, result)`` when given (after
        showing the log's last lines), else the generic diagnosis of ``_fail``."""
        self._announce(cmd)
        env = self.command_env(cmd)
        try:
            with Heartbeat(self.console, step.id) as beat:  # a pipe hears from a silent step every 30 s
                if step.progress:
                    with NinjaProgress(self.console, step.id, printed=beat.printed) as bar:

                        def feed(line: str) -> None:
                            beat.feed(line)
                            bar.feed(line)

                        result = proc.run(cmd.argv, cwd=cmd.cwd, env=env, log_path=log, on_line=feed)
                else:
                    result = proc.run(cmd.argv, cwd=cmd.cwd, env=env, log_path=log, on_line=beat.feed)
        except FileNotFoundError:
            raise StepFailed(
                f"step {step.id}: {cmd.argv[0]} was not found",
                "install it or put it on PATH (srcbuild plan shows every command a build runs)",
            ) from None
        if result.ok:
            return
        if explain is not None:
            self._show_tail(step, cmd, result, log)
            raise explain(cmd, result)
        self._fail(step, cmd, result, log)

    def _announce(self, cmd: Command) -> None:
        """One line per command saying what it does; with -v the raw command too; none with -q."""
        verbosity = console_settings.verbosity
        if verbosity >= Verbosity.VERBOSE:
            self.console.print(f"[dim]+ {cmd.shell()}[/dim]", highlight=False)
        elif verbosity >= Verbosity.NORMAL:
            # wrapped, never cut: a "why" names paths and packages a user may search for
            for piece in wrap_line(f"    - {cmd.why}", max(self.console.width, 40)):
                self.console.print(piece, style="dim", markup=False, highlight=False, soft_wrap=True)

    def _show_tail(self, step: Step, cmd: Command, result: proc.RunResult, log: Path) -> None:
        self.console.print(f"[red]step {step.id} failed: {cmd.argv[0]} exited {result.returncode}[/red]")
        self.console.print(f"--- last lines of {log} ---", highlight=False)
        for line in result.tail[-TAIL_LINES:]:
            self.console.print(line, markup=False, highlight=False)
        self.console.print("---", highlight=False)

    def _fail(self, step: Step, cmd: Command, result: proc.RunResult, log: Path) -> None:
        self._show_tail(step, cmd, result, log)
        lines = _read_lines(log)
        found = _ranked(diagnose(lines), result.returncode)
        full = self._full_filesystem(cmd, found)
        self.result.diagnoses.extend(found)
        for d in found:
            self.console.print(d.render(), markup=False, highlight=False)
        if full is not None:
            raise full
        first = first_error(lines)
        if not found and first:
            self.console.print(f"first error: {first.strip()}", markup=False, highlight=False)
        hint = found[0].hint if found else f"fix the first error ({clip_words((first or '').strip())}) or read {log}"
        if step.on_failure:
            kept = (
                "the build tree is kept (--keep-build): --resume continues it, and so does a new build"
                if self.plan.keep_build
                else "the build tree is kept for --resume, which rebuilds only what is left; "
                "a new build without --resume starts from setup.py clean"
            )
            self.console.print(kept)
        raise StepFailed(
            f"step {step.id} failed ({cmd.argv[0]} exited {result.returncode}); full log: {log}",
            f"{hint}; then continue from this step with: {self.plan.resume_command}",
        )

    def _full_filesystem(self, cmd: Command, found: list[Diagnosis]) -> DiskFull | None:
        """The DiskFull error when the log says a filesystem filled, or when one the build writes to
        (the build root, the command's directory, the temporary directory) is full now: a compiler
        that crashes on a full disk often never says why."""
        places = [self.plan.build_root, *([cmd.cwd] if cmd.cwd else []), Path(tempfile.gettempdir())]
        free = {place: n for place in places if (n := _free_bytes(place)) is not None}
        if not free:
            return None
        place = min(free, key=lambda p: free[p])  # the fullest of them
        if free[place] >= NEARLY_FULL_BYTES and not any(d.id == DISK_FULL for d in found):
            return None
        mount = filesystem_of(place)
        need = self.plan.disk_need_bytes
        wants = f"; this build needs about {_size(need)} free" if need else ""
        return DiskFull(
            f"the filesystem at {mount} is full ({_size(free[place])} free now) during the build of "
            f"{self.plan.package}{wants}",
            f"free space there (`df -h {mount}` shows it) or build on a larger disk with --work-dir, then "
            f"continue with: {self.plan.resume_command}",
        )
        return None

    def _save(self) -> None:
        self.state.save(self.plan.state_path)


# A filesystem with less free space than this after a failed compile is taken as the cause.
NEARLY_FULL_BYTES = 64 * 1024 * 1024


def _ranked(found: list[Diagnosis], returncode: int) -> list[Diagnosis]:
    """The log's diagnoses with what the exit code says (a signal) among the first, unless the log
    already says it; the table's order ranks a full disk and a killed or crashed compiler first."""
    by_code = signal_of(returncode)
    if by_code is None or any(d.id in (by_code.id, DISK_FULL) for d in found):
        return found
    return [d for d in found if d.id == DISK_FULL] + [by_code] + [d for d in found if d.id != DISK_FULL]


def _free_bytes(path: Path) -> int | None:
    try:
        return shutil.disk_usage(filesystem_of(path)).free
    except OSError:
        return None


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def environ_for_build(environ: Mapping[str, str]) -> dict[str, str]:
    """The base environment commands start from: the caller's, minus variables that would leak
    into the build unasked (a stray CUDA_HOME or TORCH_CUDA_ARCH_LIST of the user's shell)."""
    return {k: v for k, v in environ.items() if k not in NOT_INHERITED}
