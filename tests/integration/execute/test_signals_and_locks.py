"""Builds die with srcbuild, and builds that share a tree take turns.

SIGTERM and SIGHUP (a closed terminal, a job scheduler, ``kill``) stop a build as Ctrl-C does: the
compile's whole process group is terminated and reaped, the step is recorded as interrupted, the
lock is released and ``--resume`` finishes. Two recipe files with the same ``name`` share a checkout
and a build tree: built at the same time, one waits for the other and each wheel is the one its
own recipe asks for.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from srcbuild.verify.fatbin import scan_elf
from tests.integration.execute.conftest import REPO_ROOT, Srcbuild, recipe

pytestmark = pytest.mark.integration
RECIPE = "world-kepler-cu118"


def _group_gone(pgid: int, within: float) -> bool:
    """True once no process of group ``pgid`` runs (zombies waiting to be reaped do not count)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":  # state, ppid, pgrp
                alive.append(stat.parent.name)
        if not alive:
            return True
        time.sleep(0.1)
    return False


def _wait_for(path: Path, proc: subprocess.Popen[str], within: float = 180) -> None:
    deadline = time.monotonic() + within
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "the build never reached the compile"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_stops_the_whole_build_and_resume_finishes(
    srcbuild_118: Srcbuild, tmp_path: Path, sig: signal.Signals
) -> None:
    paused = tmp_path / "paused"
    proc = srcbuild_118.popen("torch", RECIPE, env={"FAKE_TORCH_PAUSE": str(paused)})
    _wait_for(paused, proc)
    time.sleep(0.2)  # every compile ninja started has written its pid by now
    compiler = int(paused.read_text())
    group = int(Path(f"/proc/{compiler}/stat").read_text().rsplit(")", 1)[1].split()[2])
    assert group != os.getpgrp()  # the build runs in its own process group
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)

    assert proc.returncode == 130, out
    assert f"error: interrupted by {sig.name} during step build; the build tree and the log" in out
    hint = next(line for line in out.splitlines() if line.startswith("hint: continue with: "))
    pasted = shlex.split(hint.removeprefix("hint: continue with: "))  # the command as a user pastes it
    assert pasted == ["srcbuild", *srcbuild_118.args("torch", RECIPE)[3:], "--resume"]
    assert _group_gone(group, within=5.0), "a process of the build outlived srcbuild"
    state = json.loads((srcbuild_118.work_dir / "builds" / f"{RECIPE}-torch" / "state.json").read_text())
    assert state["steps"]["build"]["status"] == "interrupted"

    resumed = srcbuild_118.run("torch", RECIPE, "--resume")  # the lock was released
    assert resumed.rc == 0, resumed.out
    wheel = Path(resumed.last_line)
    assert wheel.is_file()

    again = srcbuild_118.run("torch", RECIPE, "--resume")  # nothing left to resume: say so, name the wheel
    assert again.rc == 0, again.out
    assert f"nothing to resume: the build finished already; its wheel is {wheel}" in again.out
    assert again.last_line == str(wheel)


def _sms(wheel: Path) -> list[tuple[str, int]]:
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read("torch/lib/libtorch_cuda.so")
    return sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))})


def test_two_recipe_files_with_one_name_take_turns_and_build_their_own_wheels(
    srcbuild_118: Srcbuild, tmp_path: Path
) -> None:
    text = Path(recipe(RECIPE)).read_text()
    both = tmp_path / "both.toml"
    both.write_text(text)
    # The same name, another arch list and another build variable: another fingerprint, another wheel
    # (without the variable the first wheel, a superset, would serve it from the cache).
    one = tmp_path / "one" / "sm35.toml"
    one.parent.mkdir()
    other = text.replace('arch = ["3.5", "3.7"]\nptx = true', 'arch = ["3.5"]\nptx = false')
    one.write_text(other.replace('BUILD_TEST = "0", USE_NCCL = "0",', 'USE_FOO = "1",'))
    assert 'arch = ["3.5"]' in one.read_text() and "USE_FOO" in one.read_text()

    def start(path: Path) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "srcbuild", "torch", "--recipe", str(path)]
        argv += ["--mirror", srcbuild_118.world.mirror_rule, "--env", str(srcbuild_118.venv)]
        return subprocess.Popen(
            argv, env=srcbuild_118.env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    first, second = start(both), start(one)
    out_first, _ = first.communicate(timeout=600)
    out_second, _ = second.communicate(timeout=600)
    assert first.returncode == 0, out_first
    assert second.returncode == 0, out_second
    checkout = srcbuild_118.checkout(RECIPE)
    assert any(f"waiting for another build using {checkout} to finish" in out for out in (out_first, out_second))

    wheel_both = Path(out_first.strip().splitlines()[-1])
    wheel_one = Path(out_second.strip().splitlines()[-1])
    assert wheel_both.name.startswith("torch-2.5.1+cu118.sm35.sm37-")
    assert wheel_one.name.startswith("torch-2.5.1+cu118.sm35-")
    assert _sms(wheel_both) == [("ptx", 37), ("sass", 35), ("sass", 37)]
    assert _sms(wheel_one) == [("sass", 35)]
