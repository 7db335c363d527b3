"""A failed command's real cause comes first: a full disk (exit 4, the filesystem named), a crashed
or killed compiler (read from the log or the exit code), never a banner that mentions errors.

The commands are real: the disk-full case writes to /dev/full, where the kernel answers ENOSPC.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.errors import DiskFull, StepFailed
from srcbuild.execute.executor import Executor
from srcbuild.plan.model import Plan, Step

pytestmark = pytest.mark.integration

BANNER = "# configuration would be ignored/result in error due to 'pyproject.toml' #"


def _plan(tmp_path: Path, script: str) -> Plan:
    step = Step("build", "Build", "why", commands=(Command(("bash", "-c", script), "compile"),))
    return Plan(
        package="torch-scatter",
        recipe="k80",
        version="2.1.2",
        settings=(),
        steps=(step,),
        env=EnvChanges(),
        checkout=tmp_path / "src",
        build_root=tmp_path / "builds",
        dist_dir=tmp_path / "dist",
        disk_need_bytes=300 * 2**20,
        continue_command="srcbuild ext torch-scatter==2.1.2 --recipe k80 --resume",
    )


def _run(plan: Plan) -> tuple[Executor, io.StringIO]:
    out = io.StringIO()
    ex = Executor(plan, console=Console(file=out, width=200), environ={"PATH": "/usr/bin:/bin"})
    ex.run()
    return ex, out


def test_a_full_disk_is_exit_4_naming_the_filesystem(tmp_path: Path) -> None:
    plan = _plan(tmp_path, f"echo \"{BANNER}\"; echo object > /dev/full; exit 1")
    with pytest.raises(DiskFull) as err:
        _run(plan)
    assert err.value.exit_code == 4
    assert err.value.message.startswith("the filesystem at ")
    assert "during the build of torch-scatter; this build needs about 300 MiB free" in err.value.message
    assert err.value.hint is not None
    assert err.value.hint.endswith("continue with: srcbuild ext torch-scatter==2.1.2 --recipe k80 --resume")


def test_a_crashed_compiler_is_named_before_a_banner(tmp_path: Path) -> None:
    plan = _plan(tmp_path, f"echo \"{BANNER}\"; kill -SEGV $$")
    with pytest.raises(StepFailed) as err:
        _run(plan)
    assert err.value.exit_code == 5
    assert err.value.hint is not None
    assert err.value.hint.startswith("check free disk (`df -h`) and memory")
    resume = "srcbuild ext torch-scatter==2.1.2 --recipe k80 --resume"
    assert err.value.hint.endswith(f"continue from this step with: {resume}")
    assert BANNER not in err.value.hint
