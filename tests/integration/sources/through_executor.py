"""Run the planned sources and patches steps through the real executor, as a build does.

The steps come from ``srcbuild.plan.sources`` (the planner's own functions) and run in a one-step
``Plan`` under ``srcbuild.execute.Executor``: the skip condition, the typed action, the cache lock,
the failure explanation and the step's log are the build's own. ``sync`` then asks the pinned
commit the way the build's ``sources-check`` step does (``SourceSync.verify_commit``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console

from srcbuild.envmods import EnvChanges
from srcbuild.execute.executor import Executor
from srcbuild.plan.model import Plan, Step
from srcbuild.plan.sources import patches_step, sources_steps
from srcbuild.resolve.model import ResolvedPatch
from srcbuild.sources import checkout as on_disk
from srcbuild.sources.patches import patch_sha256
from srcbuild.sources.sync import SourceSync


def step_log(build_root: Path, step_id: str) -> Path:
    """Where the executor writes the log of the plan's only step."""
    return build_root / "logs" / f"01-{step_id}.log"


def run_step(step: Step, build_root: Path, environ: Mapping[str, str] | None = None) -> str:
    """Run one planned step in a plan of its own; returns what the executor printed."""
    plan = Plan(
        package="torch",
        recipe="test",
        version="0+test",
        settings=(),
        steps=(step,),
        env=EnvChanges(),
        checkout=build_root / "src",
        build_root=build_root,
        dist_dir=build_root / "dist",
    )
    out = io.StringIO()
    env = dict(os.environ) if environ is None else dict(environ)  # the test's environment, as the CLI passes it
    Executor(plan, console=Console(file=out, width=200), environ=env).run()
    return out.getvalue()


def sync(source: SourceSync, build_root: Path) -> str:
    """The build's sources step for ``source``, then its commit check; returns the checked-out commit."""
    fetch, _check = sources_steps(source)
    run_step(fetch, build_root)
    return on_disk.verify_commit(source, os.environ)


def apply_patches(checkout: Path, files: Sequence[Path], labels: Sequence[str], build_root: Path) -> str:
    """The build's patches step for these patch files (named by ``labels``); returns its output."""
    resolved = tuple(ResolvedPatch(label, path, patch_sha256(path)) for path, label in zip(files, labels))
    step = patches_step(checkout, resolved)
    assert step is not None
    return run_step(step, build_root)
