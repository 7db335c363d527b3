"""End-to-end builds of the fake torch with real git, gcc, nvcc, MPI and update-alternatives."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from srcbuild.verify.fatbin import scan_elf
from tests.integration.cache.conftest import make_key, moto_endpoint, s3_bucket  # noqa: F401 (fixtures)
from tests.integration.execute.conftest import CP, Srcbuild

pytestmark = pytest.mark.integration


def _sms(wheel: Path, member: str) -> list[tuple[str, int]]:
    """(kind, sm) of every device-code entry of one library inside the wheel."""
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read(member)
    return sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))})


def _gone(pid: int, within: float) -> bool:
    """True once ``pid`` no longer runs (gone, or a zombie waiting to be reaped)."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_kepler_build_with_cuda118_and_private_gcc11(srcbuild_118: Srcbuild) -> None:
    ran = srcbuild_118.run("torch", "world-kepler-cu118")
    assert ran.rc == 0, ran.out
    wheel = Path(ran.last_line)
    assert wheel.name == f"torch-2.5.1+cu118.sm35.sm37-{CP}-{CP}-linux_x86_64.whl"
    assert wheel.is_file() and srcbuild_118.cache_dir in wheel.parents
    assert _sms(wheel, "torch/lib/libtorch_cuda.so") == [("ptx", 37), ("sass", 35), ("sass", 37)]
    # gcc-11 came from the private alternatives tree, first on PATH, and nvcc used it as host compiler
    links = srcbuild_118.work_dir / "compilers" / "gcc-11" / "bin"
    assert (links / "gcc").resolve() == Path("/usr/bin/gcc-11").resolve()
    assert (links / "g++").resolve() == Path("/usr/bin/g++-11").resolve()
    log = srcbuild_118.configure_log("world-kepler-cu118").read_text()  # configured by the canary
    assert f"-DCUDA_HOST_COMPILER={links / 'g++'}" in log  # nvcc's -ccbin
    cmake_cache = (srcbuild_118.checkout("world-kepler-cu118") / "build" / "CMakeCache.txt").read_text()
    assert f"CMAKE_C_COMPILER:FILEPATH={links / 'gcc'}" in cmake_cache  # from CC
    ua_log = srcbuild_118.work_dir / "compilers" / "gcc-11" / "update-alternatives.log"
    assert "gcc" in ua_log.read_text()  # --log went to the private tree
    # a second build is a cache hit: nothing is compiled, the same wheel is printed last
    again = srcbuild_118.run("torch", "world-kepler-cu118")
    assert again.rc == 0, again.out
    assert "cache hit" in again.out and "==> [" not in again.out
    assert again.last_line == ran.last_line
    as_json = subprocess.run(
        srcbuild_118.args("torch", "world-kepler-cu118", "--json"),
        env=srcbuild_118.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    result = json.loads(as_json.stdout)
    assert result["cached"] is True and result["wheel"] == ran.last_line
    assert result["version"] == "2.5.1+cu118.sm35.sm37" and result["steps"] == []


def test_gcc12_is_refused_by_the_preflight_and_by_nvcc_118(srcbuild_118: Srcbuild) -> None:
    ran = srcbuild_118.run("torch", "world-kepler-cu118-gcc12")
    assert ran.rc == 3, ran.out
    assert (
        "error: recipe world-kepler-cu118-gcc12 breaks 1 compatibility rule(s): CUDA 11.8 accepts host gcc ≤ 11"
        in ran.out
    )
    assert not srcbuild_118.checkout("world-kepler-cu118-gcc12").exists()  # stopped before fetching
    # the preflight was right: run the same plan without it and nvcc 11.8 refuses gcc 12
    forced = srcbuild_118.run("torch", "world-kepler-cu118-gcc12", "--ignore-preflight")
    assert forced.rc == 5, forced.out
    assert "#error -- unsupported GNU version! gcc versions later than 11 are not supported!" in forced.out
    assert "diagnosis: nvcc refuses the host compiler: this CUDA accepts gcc 11 at most" in forced.out
    assert "fix: set [toolchain] gcc to 11 or older in the recipe" in forced.out


def test_turing_build_with_cuda13(srcbuild_130: Srcbuild) -> None:
    ran = srcbuild_130.run("torch", "world-turing-cu130")
    assert ran.rc == 0, ran.out
    wheel = Path(ran.last_line)
    assert wheel.name == f"torch-2.9.0+cu130.sm75-{CP}-{CP}-linux_x86_64.whl"
    assert _sms(wheel, "torch/lib/libtorch_cuda.so") == [("sass", 75)]
    links = srcbuild_130.work_dir / "compilers" / "gcc-12" / "bin"
    assert (links / "gcc").resolve() == Path("/usr/bin/gcc-12").resolve()


def test_mpi_is_linked(srcbuild_118: Srcbuild, mpicc: Path) -> None:
    ran = srcbuild_118.run("torch", "world-kepler-cu118-mpi")
    assert ran.rc == 0, ran.out
    log = srcbuild_118.configure_log("world-kepler-cu118-mpi").read_text()
    assert "-DUSE_MPI=1" in log and "MPI support found" in log
    assert "ok       USE_MPI: ON (summary:USE_MPI)" in ran.out
    assert "ok       torch/csrc/distributed/c10d/ProcessGroupMPI.cpp.o: compiled" in ran.out.replace(
        "CMakeFiles/torch_cpu.dir/", ""
    )
    with zipfile.ZipFile(ran.last_line) as zf:
        cpu = zf.read("torch/lib/libtorch_cpu.so")
    assert b"libmpi.so" in cpu and b"fake_torch_mpi_available" in cpu


# What a build killed at the late object leaves to do: that object and its library, and the torch_cpu
# link when ninja stopped before starting it (the Ninja generator compiles a target's objects beside its
# dependencies' links, as torch's own build does, so under load the kill can come first).
LEFT_AFTER_THE_KILL = {
    "Building C object CMakeFiles/torch_python.dir/csrc/python_bindings.c.o",
    "Linking C shared library libtorch_python.so",
    "Linking C shared library libtorch_cpu.so",
}


def ninja_edges(log: str) -> set[str]:
    """What ninja ran, from its `[N/M] description` lines."""
    return {line.split("] ", 1)[1] for line in log.splitlines() if re.match(r"\[\d+/\d+\] ", line)}


def test_failure_is_explained_kept_and_resumed_cheaply(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    knob = {"FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once")}
    ran = srcbuild_118.run("torch", "world-kepler-cu118", env=knob)
    assert ran.rc == 5, ran.out
    log = srcbuild_118.build_log("world-kepler-cu118")
    assert "gcc: fatal error: Killed signal terminated program cc1" in log.read_text()  # the log is kept
    assert (
        "diagnosis: the compiler was killed, most likely by the out-of-memory killer "
        "(Killed signal terminated program cc1)" in ran.out
    )
    assert "fix: run fewer compile jobs at once: --max-jobs with a smaller number (then --resume)" in ran.out
    assert (
        "the build tree is kept for --resume, which rebuilds only what is left; "
        "a new build without --resume starts from setup.py clean" in ran.out
    )
    assert "error: step build failed (" in ran.out and f"full log: {log}" in ran.out
    exact = shlex.join(["srcbuild", *srcbuild_118.args("torch", "world-kepler-cu118")[3:], "--resume"])
    assert ran.out.splitlines()[-1].endswith(f"; then continue from this step with: {exact}")  # pasteable
    checkout = srcbuild_118.checkout("world-kepler-cu118")
    assert (checkout / "build" / "libtorch_cuda.so").exists()  # kept for --resume
    state = json.loads((srcbuild_118.work_dir / "builds" / "world-kepler-cu118-torch" / "state.json").read_text())
    assert state["steps"]["build"]["status"] == "failed" and state["steps"]["sources"]["status"] == "done"

    dist = tmp_path / "dist"
    resumed = srcbuild_118.run("torch", "world-kepler-cu118", "--resume", "--output-dir", str(dist), env=knob)
    assert resumed.rc == 0, resumed.out
    assert "Sources: https://github.com/pytorch/pytorch at v2.5.1: done in an earlier run" in resumed.out
    wheel = Path(resumed.last_line)
    assert wheel.parent == dist and wheel.is_file()  # --output-dir: a copy of the cached wheel
    assert wheel.name == f"torch-2.5.1+cu118.sm35.sm37-{CP}-{CP}-linux_x86_64.whl"
    second = log.read_text()
    second = second[second.rindex("Everything's in place. Do not rerun.") :]
    edges = ninja_edges(second)
    assert "Building C object CMakeFiles/torch_python.dir/csrc/python_bindings.c.o" in edges, second
    assert edges <= LEFT_AFTER_THE_KILL, second  # only what is left


def test_a_new_build_after_a_failure_starts_from_setup_py_clean(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    knob = {"FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once")}
    assert srcbuild_118.run("torch", "world-kepler-cu118", env=knob).rc == 5
    again = srcbuild_118.run("torch", "world-kepler-cu118", env=knob)  # not --resume
    assert again.rc == 0, again.out
    assert "the last build failed in this tree: starting from setup.py clean (--resume continues it)" in again.out
    assert "ops_01.c" in srcbuild_118.build_log("world-kepler-cu118").read_text()  # everything compiled again


def test_failure_tag_keeps_log_and_tree(srcbuild_118: Srcbuild) -> None:
    ran = srcbuild_118.run("torch", "world-fail")
    assert ran.rc == 5, ran.out
    assert "first error: " in ran.out and "undefined_symbol_in_failure_tag" in ran.out
    assert not [line for line in ran.out.splitlines() if line.startswith("+ ") and "setup.py clean" in line]
    assert (srcbuild_118.checkout("world-fail") / "build").exists()
    assert "undeclared" in srcbuild_118.build_log("world-fail").read_text()


def test_keep_build_resume_rebuilds_only_what_is_left(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    knob = {"FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once")}
    ran = srcbuild_118.run("torch", "world-kepler-cu118", "--keep-build", env=knob)
    assert ran.rc == 5, ran.out
    assert "cleaning the failed build" not in ran.out
    assert (srcbuild_118.checkout("world-kepler-cu118") / "build" / "libtorch_cuda.so").exists()
    resumed = srcbuild_118.run("torch", "world-kepler-cu118", "--keep-build", "--resume", env=knob)
    assert resumed.rc == 0, resumed.out
    log = srcbuild_118.build_log("world-kepler-cu118").read_text()
    second = log[log.rindex("Everything's in place. Do not rerun.") :]
    edges = ninja_edges(second)
    assert "Linking C shared library libtorch_python.so" in edges, second
    assert edges <= LEFT_AFTER_THE_KILL, second  # only what is left


def test_changed_settings_clean_a_stale_build_tree(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    knob = {"FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once")}
    assert srcbuild_118.run("torch", "world-kepler-cu118", "--keep-build", env=knob).rc == 5
    changed = tmp_path / "world-kepler-cu118.toml"
    text = Path(srcbuild_118.args("torch", "world-kepler-cu118")[5]).read_text()
    changed.write_text(text.replace('USE_NCCL = "0"', 'USE_NCCL = "0", USE_FOO = "1"'))
    argv = srcbuild_118.args("torch", "world-kepler-cu118", "--keep-build", "--resume")
    argv[5] = str(changed)

    done = subprocess.run(
        argv, env={**srcbuild_118.env, **knob}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert done.returncode == 0, done.stdout
    assert "was configured with other settings (settings hash " in done.stdout
    assert "cleaning it first" in done.stdout
    log = srcbuild_118.configure_log("world-kepler-cu118").read_text()
    assert "-DUSE_FOO=1" in log


def test_ctrl_c_stops_the_tree_and_resume_finishes(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    import signal
    import time

    paused = tmp_path / "paused"
    proc = srcbuild_118.popen("torch", "world-kepler-cu118", env={"FAKE_TORCH_PAUSE": str(paused)})
    deadline = time.monotonic() + 120
    while not paused.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    launcher = int(paused.read_text())
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "error: interrupted during step build; the build tree and the log" in out
    hint = next(line for line in out.splitlines() if line.startswith("hint: continue with: "))
    pasted = shlex.split(hint.removeprefix("hint: continue with: "))  # the command as a user pastes it
    assert pasted == ["srcbuild", *srcbuild_118.args("torch", "world-kepler-cu118")[3:], "--resume"]
    assert _gone(launcher, within=10.0)  # the whole process tree was stopped, not only srcbuild
    assert (srcbuild_118.checkout("world-kepler-cu118") / "build" / "libtorch_cuda.so").exists()  # kept
    state = json.loads((srcbuild_118.work_dir / "builds" / "world-kepler-cu118-torch" / "state.json").read_text())
    assert state["steps"]["build"]["status"] == "interrupted"
    done = subprocess.run(
        [sys.executable, "-m", "srcbuild", *pasted[1:]],
        env=srcbuild_118.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout
    assert Path(done.stdout.strip().splitlines()[-1]).is_file()


def test_patches_are_checked_applied_once_and_skipped_on_resume(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    env = {
        "SRCBUILD_PATCHES_PATH": str(Path(__file__).parent / "patches"),
        "FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once"),
    }
    ran = srcbuild_118.run("torch", "world-patched", "--keep-build", env=env)
    assert ran.rc == 5, ran.out
    assert "    - check that patch torch/v2.5.1/0001-mark-patched.patch applies" in ran.out  # one line per command
    bindings = srcbuild_118.checkout("world-patched") / "csrc" / "python_bindings.c"
    assert bindings.read_text().count("patched by the recipe") == 1
    resumed = srcbuild_118.run("torch", "world-patched", "--keep-build", "--resume", env=env)
    assert resumed.rc == 0, resumed.out
    assert "Patches: torch/v2.5.1/0001-mark-patched.patch: done in an earlier run" in resumed.out
    assert bindings.read_text().count("patched by the recipe") == 1
    with zipfile.ZipFile(resumed.last_line) as zf:
        assert b"patched by the recipe" in zf.read("torch/lib/libtorch_python.so")


def test_a_new_build_reuses_a_complete_checkout_and_its_build_tree(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    knob = {"FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once")}
    assert srcbuild_118.run("torch", "world-kepler-cu118", "--keep-build", env=knob).rc == 5
    again = srcbuild_118.run("torch", "world-kepler-cu118", "--keep-build", env=knob)  # not --resume
    assert again.rc == 0, again.out
    assert "skipped: the checkout is already at the tag with every submodule (its build tree is kept)" in again.out
    assert "the existing build tree was configured with these settings: reusing it" in again.out


def test_a_wheel_on_a_remote_serves_another_machine_without_building(
    srcbuild_130: Srcbuild,
    tmp_path: Path,
    moto_endpoint: str,  # noqa: F811 (the fixture imported above)
    s3_bucket: str,  # noqa: F811
) -> None:
    built = srcbuild_130.run("torch", "world-turing-cu130")
    assert built.rc == 0, built.out
    # the entry records what the build measured: every submodule commit and the real compilers
    manifest = json.loads((Path(built.last_line).parent / "manifest.json").read_text())
    resolved = manifest["resolved"]
    assert len(resolved["submodule_commits"]) == 3  # the build world has three submodules
    assert all(len(commit) == 40 for commit in resolved["submodule_commits"].values())
    assert resolved["gcc_version"].startswith("12.") and resolved["nvcc_version"].startswith("13.")
    # another machine: its own empty work dir and cache, no git and no compiler on PATH,
    # and the first machine's cache directory mounted as a shared remote
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    other = {
        **srcbuild_130.env,
        "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
        "SRCBUILD_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": str(empty_bin),
    }
    ran = srcbuild_130.run(
        "torch", "world-turing-cu130", "--remote", str(srcbuild_130.cache_dir), "--trust-unsigned", env=other
    )
    assert ran.rc == 0, ran.out
    assert f"cache hit from {srcbuild_130.cache_dir}" in ran.out and "==> [" not in ran.out
    wheel = Path(ran.last_line)
    assert wheel.name == Path(built.last_line).name
    assert (tmp_path / "cache") in wheel.parents  # pulled into this machine's store
    assert not (tmp_path / "work" / "src").exists()  # no checkout was made

    # a third machine trusts only alice, who pushed the wheel to S3 (the endpoint from the
    # environment alone); an unreachable index and the unsigned share are warnings, not aborts
    key = make_key(tmp_path / "keys", "alice")
    s3 = {
        "SRCBUILD_S3_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    remote = f"s3://{s3_bucket}/lab"
    push = subprocess.run(
        [sys.executable, "-m", "srcbuild", "cache", "push", "--signing-key", str(key), "--remote", remote],
        env={**srcbuild_130.env, **s3},
        capture_output=True,
        text=True,
    )
    assert push.returncode == 0, push.stdout + push.stderr
    third = {
        **other,
        **s3,
        "SRCBUILD_CACHE_DIR": str(tmp_path / "cache-3"),
        "SRCBUILD_TRUSTED_SIGNERS": str(tmp_path / "trusted"),
    }
    (tmp_path / "trusted").write_text(f"alice {(tmp_path / 'keys' / 'alice.pub').read_text()}")
    closed = "http://127.0.0.1:9/"
    ran = srcbuild_130.run(
        "torch", "world-turing-cu130", "--remote", closed, "--remote", str(srcbuild_130.cache_dir),
        "--remote", remote, env=third,
    )  # fmt: skip
    assert ran.rc == 0, ran.out
    assert f"warning: remote {closed} skipped: {closed}: cannot read the project list (" in ran.out
    assert "the entry is not signed (the next remote is tried)" in ran.out
    assert f"cache hit from {remote}" in ran.out and "==> [" not in ran.out
    assert Path(ran.last_line).name == Path(built.last_line).name
