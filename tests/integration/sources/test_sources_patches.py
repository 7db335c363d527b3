"""Patches with real git apply, through the build's patches step and executor: all checked first,
applied once, a resumed build does not reapply."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from srcbuild.errors import StepFailed
from srcbuild.sources import checkout as on_disk
from srcbuild.sources.patches import PatchSet
from tests.integration.sources.through_executor import apply_patches, step_log

pytestmark = pytest.mark.integration

SETUP = "import setuptools\n\nversion = '1.7.1'\nuse_nccl = True\n"


def git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, check=True).stdout


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    co = tmp_path / "torch"
    co.mkdir()
    git(co, "init", "--quiet")
    (co / "setup.py").write_text(SETUP)
    (co / "README.md").write_text("torch\n")
    git(co, "add", ".")
    git(co, "commit", "--quiet", "-m", "v1.7.1")
    return co


def make_patch(checkout: Path, path: str, new: str, out: Path) -> Path:
    """A patch of ``path`` to ``new`` content, made with git diff and then reverted."""
    old = (checkout / path).read_text()
    (checkout / path).write_text(new)
    out.write_text(git(checkout, "diff"))
    (checkout / path).write_text(old)
    return out


@pytest.fixture()
def series(checkout: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two patches of setup.py where the second builds on the first."""
    first_text = SETUP.replace("use_nccl = True", "use_nccl = False")
    p1 = make_patch(checkout, "setup.py", first_text, tmp_path / "01-no-nccl.patch")
    (checkout / "setup.py").write_text(first_text)
    git(checkout, "add", "setup.py")  # so that the second diff starts from the first patch's result
    p2 = make_patch(checkout, "setup.py", first_text + "use_sm30 = True\n", tmp_path / "02-sm30.patch")
    git(checkout, "reset", "--quiet", "--hard")
    assert (checkout / "setup.py").read_text() == SETUP
    alone = subprocess.run(["git", "apply", "--check", str(p2)], cwd=checkout, capture_output=True)
    assert alone.returncode != 0  # p2 needs p1
    return p1, p2


def test_series_checked_cumulatively_then_applied_once(
    checkout: Path, series: tuple[Path, Path], tmp_path: Path
) -> None:
    labels = ["kepler/01-no-nccl.patch", "kepler/02-sm30.patch"]
    patches = PatchSet(checkout, series, labels)
    assert not on_disk.patches_applied(patches, os.environ)
    apply_patches(checkout, series, labels, tmp_path / "build")
    assert on_disk.patches_applied(patches, os.environ)
    assert (checkout / "setup.py").read_text().endswith("use_nccl = False\nuse_sm30 = True\n")
    assert set(on_disk.recorded_patches(patches, os.environ)) == {"kepler/01-no-nccl.patch", "kepler/02-sm30.patch"}
    # a second run (a resumed build) has nothing to do and changes nothing: the step is skipped
    assert not on_disk.pending_patches(patches, os.environ)
    again = apply_patches(checkout, series, labels, tmp_path / "build")
    assert "skipped: every patch is already applied to the checkout" in again
    assert (checkout / "setup.py").read_text().count("use_sm30") == 1


def test_bad_second_patch_means_none_applied(checkout: Path, series: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "03-bad.patch"
    bad.write_text(series[1].read_text().replace("version = '1.7.1'", "version = '9.9.9'"))
    patches = PatchSet(checkout, [series[0], bad], ["01-no-nccl.patch", "03-bad.patch"])
    with pytest.raises(StepFailed) as err:
        apply_patches(checkout, [series[0], bad], ["01-no-nccl.patch", "03-bad.patch"], tmp_path / "build")
    assert err.value.message == (
        f"patch {bad} does not apply to {checkout}: error: patch failed: setup.py:2; "
        "error: setup.py: patch does not apply"
    )
    log = step_log(tmp_path / "build", "patches")
    assert err.value.hint == (
        f"no patch was applied; update the patch for this tag or drop it from build.patches; full output in {log}"
    )
    assert "patch does not apply" in log.read_text()
    assert (checkout / "setup.py").read_text() == SETUP
    assert on_disk.recorded_patches(patches, os.environ) == {}


def test_resumed_after_the_first_patch_applies_only_the_rest(
    checkout: Path, series: tuple[Path, Path], tmp_path: Path
) -> None:
    patches = PatchSet(checkout, series, ["01.patch", "02.patch"])
    # as if the build was interrupted right after recording patch 1
    apply_patches(checkout, series[:1], ["01.patch"], tmp_path / "first")
    todo = on_disk.pending_patches(patches, os.environ)
    assert todo.labels == ("02.patch",)
    assert [c.argv[-1] for c in todo.check_commands()] == [str(series[1])]
    out = apply_patches(checkout, series, ["01.patch", "02.patch"], tmp_path / "build")
    assert "already applied: 01.patch (their commands skip them)" in out
    assert on_disk.patches_applied(patches, os.environ)
    assert (checkout / "setup.py").read_text() == SETUP.replace("True", "False") + "use_sm30 = True\n"


def test_rerunning_every_command_of_the_step_is_safe(checkout: Path, series: tuple[Path, Path]) -> None:
    """An executor that reruns the whole step after an interruption: recorded patches are skipped."""
    patches = PatchSet(checkout, series, ["01.patch", "02.patch"])
    commands = patches.check_commands() + patches.apply_commands()
    for command in commands[:3]:  # both checks, then patch 1 applied and recorded: interrupted here
        subprocess.run(command.argv, cwd=command.cwd, check=True)
    assert set(on_disk.recorded_patches(patches, os.environ)) == {"01.patch"}
    for command in commands:  # the step again, from the start
        subprocess.run(command.argv, cwd=command.cwd, check=True)
    for command in commands:  # and once more, when everything is applied
        subprocess.run(command.argv, cwd=command.cwd, check=True)
    assert on_disk.patches_applied(patches, os.environ)
    assert (checkout / "setup.py").read_text() == SETUP.replace("True", "False") + "use_sm30 = True\n"


def test_changed_or_dropped_patch_refuses_the_checkout(
    checkout: Path, series: tuple[Path, Path], tmp_path: Path
) -> None:
    apply_patches(checkout, series, ["01.patch", "02.patch"], tmp_path / "build")
    with pytest.raises(StepFailed) as err:
        apply_patches(checkout, series[:1], ["01.patch"], tmp_path / "build")
    assert err.value.message == (
        f"patches: {checkout} has patches applied that the recipe no longer asks for: "
        "02.patch (no longer in the recipe)"
    )
    assert err.value.hint == f"remove {checkout} so the sources step checks it out again"
    series[0].write_text(series[0].read_text() + "\n")
    with pytest.raises(StepFailed) as err:
        apply_patches(checkout, series, ["01.patch", "02.patch"], tmp_path / "build")
    assert "01.patch (changed since)" in err.value.message
