"""The record of a hit (``srcbuild.quick_hit``) and the trace it is made from (``srcbuild.read_trace``):
its key, the states it compares, how it is kept and read, the driver's state, the installer line.
The real command reading and refusing records runs in tests/integration/cache/test_quick_hit.py."""

from __future__ import annotations

import marshal
import os
import shlex
import tempfile
from pathlib import Path

import pytest

from srcbuild import quick_hit
from srcbuild.quick_hit import MAX_RECORDS, PLACEHOLDER, driver_state, key, plain, quote, state
from srcbuild.read_trace import current, tracing

ARGV = ["install", "torch", "--recipe", "kepler-cu92", "--into", "/envs/a", "--no-deps"]


def test_the_key_leaves_out_the_into_value_and_the_shells_bookkeeping() -> None:
    env = {"PATH": "/usr/bin", "_": "/usr/bin/srcbuild", "OLDPWD": "/x", "PWD": "/y", "SHLVL": "2"}
    env["UV_CACHE_DIR"] = "/u"
    first, into = key(ARGV, env, "/work")  # type: ignore[misc]
    assert into == "/envs/a" and PLACEHOLDER in first[5]
    other, _ = key([*ARGV[:5], "/envs/b", ARGV[6]], {"PATH": "/usr/bin", "UV_CACHE_DIR": "/v"}, "/work")  # type: ignore[misc]
    assert other == first
    assert key([*ARGV[:4], "--into=/envs/b", ARGV[6]], env, "/work")[1] == "/envs/b"  # type: ignore[index]
    assert key(ARGV, {**env, "CUDA_HOME": "/cuda"}, "/work")[0] != first  # type: ignore[index]
    assert key(ARGV, env, "/elsewhere")[0] != first  # type: ignore[index]
    assert key([*ARGV, "--into", "/envs/c"], env, "/work") is None  # twice: the command line decides
    assert key([*ARGV, "--", "x"], env, "/work") is None
    assert key(["install", "torch", "--into"], env, "/work") is None


@pytest.mark.parametrize("path", ["/envs/a", "envs/a", "a", "/a/b.c/d"])
def test_a_plain_path_is_what_pathlib_writes(path: str) -> None:
    assert plain(path) and str(Path(path)) == path


@pytest.mark.parametrize("path", ["", "/envs/a/", "envs//a", "./a", "a/./b", "//a", "-x"])
def test_a_path_pathlib_would_rewrite_is_not_plain(path: str) -> None:
    assert not plain(path)


@pytest.mark.parametrize("word", ["plain", "/a/b-c_d.whl", "", "with space", "it's", "a$b", "é", "x=1,y:2@3%+"])
def test_quote_writes_what_shlex_writes(word: str) -> None:
    assert quote(word) == shlex.quote(word)


def test_a_state_changes_with_the_file_and_a_listed_directory_with_its_entries(tmp_path: Path) -> None:
    f = tmp_path / "f"
    assert state(str(f)) is None
    f.write_text("one")
    was = state(str(f))
    assert was is not None and was[0] == "file" and state(str(f)) == was
    st = f.stat()
    f.write_text("two")  # the same size; the modification time put back: the change time moves
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert state(str(f)) != was
    asked, listed = state(str(tmp_path)), state(str(tmp_path), listed=True)
    (tmp_path / "new").touch()
    assert state(str(tmp_path)) == asked == ("dir",) and state(str(tmp_path), listed=True) != listed


def test_a_record_is_written_whole_read_back_and_the_oldest_go(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    first, _ = key(ARGV, env, "/work")  # type: ignore[misc]
    path = quick_hit.record_path(env, first)
    assert path.startswith(str(tmp_path / "srcbuild" / "hits"))
    assert quick_hit._write(path, marshal.dumps({"key": first}))
    assert quick_hit._read(path) == {"key": first}
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".tmp")]
    os.chmod(path, 0o620)  # another may write it
    assert quick_hit._read(path) is None
    os.chmod(path, 0o600)
    Path(path).write_bytes(b"\x00damaged")
    assert quick_hit._read(path) is None
    for n in range(MAX_RECORDS + 3):
        quick_hit._write(os.path.join(os.path.dirname(path), f"{n:016x}.marshal"), marshal.dumps({}))
    assert len(os.listdir(os.path.dirname(path))) == MAX_RECORDS


def test_install_again_declines_without_a_record(tmp_path: Path) -> None:
    assert quick_hit.install_again(ARGV, {"XDG_CACHE_HOME": str(tmp_path)}) is None


def test_the_drivers_state_names_nvidia_smi_the_module_and_each_gpu(tmp_path: Path) -> None:
    bin_dir, root = tmp_path / "bin", tmp_path / "driver"
    bin_dir.mkdir()
    env = {"PATH": str(bin_dir)}
    assert driver_state(env, str(root)) == ("absent",)
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n")
    smi.chmod(0o755)
    assert driver_state(env, str(root))[3] is None  # nvidia-smi without the module's version: no record
    (root / "gpus" / "0000:01:00.0").mkdir(parents=True)
    (root / "version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.256.02\n")
    (root / "gpus" / "0000:01:00.0" / "information").write_text("Model: Tesla K80\n")
    was = driver_state(env, str(root))
    assert was[:2] == ("present", str(smi)) and was[4] == (("0000:01:00.0", "Model: Tesla K80\n"),)
    (root / "gpus" / "0000:01:00.0" / "information").write_text("Model: Tesla P100-PCIE-16GB\n")
    assert driver_state(env, str(root)) != was  # another GPU in the slot
    (root / "gpus" / "0000:01:00.0" / "information").write_text("Model: Tesla K80\n")
    (root / "version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.239.06\n")
    assert driver_state(env, str(root)) != was  # another driver


def test_a_trace_sees_reads_listings_questions_and_what_the_work_made(tmp_path: Path) -> None:
    read, absent = tmp_path / "read.toml", tmp_path / "absent.toml"
    read.write_text("x = 1\n")
    assert current() is None
    with tracing() as trace:
        assert current() is trace
        read.read_text()
        absent.exists()
        os.listdir(tmp_path)
        (tmp_path / "out").write_text("written")
        made = tempfile.mkdtemp(dir=tmp_path)
        Path(made, "inside").touch()
    assert current() is None
    assert str(read) in trace.opened and str(absent) in trace.asked and str(tmp_path) in trace.listed
    assert str(tmp_path / "out") in trace.written and trace.is_made(str(tmp_path / "out"))
    assert trace.is_made(os.path.join(made, "inside")) and not trace.is_made(str(read))
    read.read_text()  # after the trace: not seen
    assert not hasattr(os.stat, "__wrapped__")


def test_a_trace_records_programs_and_says_when_it_missed_an_event() -> None:
    import sys

    with tracing() as trace:
        sys.audit("subprocess.Popen", "nvidia-smi", ["nvidia-smi", "-L"], None, None)
        assert not trace.incomplete
        sys.audit("subprocess.Popen", "odd", 5, None, None)  # unreadable: the audited call still goes on
    assert trace.programs == [("nvidia-smi", "-L")] and trace.incomplete


def test_a_question_the_trace_cannot_note_marks_it_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the working directory is gone: a relative path has no absolute name to note
    with tracing() as trace, pytest.raises(FileNotFoundError):
        os.stat("relative")  # os.stat's own answer, not the trace's failure
    assert trace.incomplete
