"""EnvStore: complete environments are reused, half-made ones never are; BuildEnv's variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.envs.prefix import MARKER, EnvStore, compiler_changes, existing_env, is_complete
from srcbuild.errors import UsageError


def make_files(target: Path, final: Path) -> None:
    (target / "bin").mkdir(parents=True)
    (target / "bin" / "python").write_text("#!/bin/sh\n")


def test_created_then_reused(tmp_path: Path) -> None:
    store = EnvStore(tmp_path / "envs")
    calls: list[Path] = []

    def create(target: Path, final: Path) -> None:
        calls.append(target)
        make_files(target, final)

    prefix, reused = store.ensure("k1", "h1", create)
    assert (prefix, reused) == (tmp_path / "envs" / "k1", False)
    assert calls[0].name == f".k1.tmp-{os.getpid()}"  # made aside, renamed into place
    assert is_complete(prefix, "h1")
    assert store.ensure("k1", "h1", create) == (prefix, True)
    assert len(calls) == 1


def test_a_failed_creation_leaves_nothing(tmp_path: Path) -> None:
    store = EnvStore(tmp_path / "envs")

    def create(target: Path, final: Path) -> None:
        make_files(target, final)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.ensure("k1", "h1", create)
    assert sorted(p.name for p in store.root.iterdir()) == [".k1.lock"]


def test_finish_failure_removes_the_renamed_prefix(tmp_path: Path) -> None:
    store = EnvStore(tmp_path / "envs")

    def finish(final: Path) -> None:
        raise RuntimeError("pip failed")

    with pytest.raises(RuntimeError):
        store.ensure("k1", "h1", make_files, finish)
    assert not (store.root / "k1").exists()


def test_leftovers_and_half_made_prefixes_are_removed(tmp_path: Path) -> None:
    store = EnvStore(tmp_path / "envs")
    (store.root / ".k1.tmp-99999" / "lib").mkdir(parents=True)  # a killed creation
    (store.root / "k1" / "bin").mkdir(parents=True)  # renamed, but its marker was never written
    prefix, reused = store.ensure("k1", "h1", make_files)
    assert not reused
    assert sorted(p.name for p in store.root.iterdir()) == [".k1.lock", "k1"]
    assert (prefix / MARKER).is_file()


def test_marker_of_another_spec_is_not_reused(tmp_path: Path) -> None:
    store = EnvStore(tmp_path / "envs")
    store.ensure("k1", "h1", make_files)
    _, reused = store.ensure("k1", "h2", make_files)
    assert not reused


def test_remove_and_remove_all(tmp_path: Path) -> None:
    store = EnvStore(tmp_path / "envs")
    store.ensure("k1", "h1", make_files)
    store.ensure("k2", "h2", make_files)
    assert store.remove("k1") is True
    assert store.remove("k1") is False
    assert [p.name for p, _ in store.entries()] == ["k2"]
    assert store.remove_all() == [store.root / "k2"]
    assert store.entries() == []


def test_existing_conda_env_and_venv(tmp_path: Path) -> None:
    conda = tmp_path / "conda"
    (conda / "conda-meta").mkdir(parents=True)
    make_files(conda, conda)
    (conda / "bin" / "x86_64-conda-linux-gnu-gcc").write_text("")
    env = existing_env(conda)
    assert env.backend == "existing conda"
    assert env.python == conda / "bin" / "python"
    assert env.env_changes.shell_lines() == [
        f'export PATH={conda / "bin"}"${{PATH:+:$PATH}}"',
        f'export CMAKE_PREFIX_PATH={conda}"${{CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}}"',
        f"export CONDA_PREFIX={conda}",
        f"export CC={conda / 'bin' / 'x86_64-conda-linux-gnu-gcc'}",
    ]
    venv = tmp_path / "venv"
    make_files(venv, venv)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert existing_env(venv).env_changes.final_values() == {"VIRTUAL_ENV": str(venv)}


def test_existing_env_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        existing_env(tmp_path)
    assert err.value.message == (
        f"--env {tmp_path} is neither a conda environment (no conda-meta/) nor a venv (no pyvenv.cfg)"
    )
    with pytest.raises(UsageError) as err:
        existing_env(tmp_path / "missing")
    assert err.value.message == f"--env {tmp_path / 'missing'}: no such directory"


def test_plain_gcc_wins_over_a_cross_prefixed_one(tmp_path: Path) -> None:
    make_files(tmp_path, tmp_path)
    for name in ("gcc", "g++", "x86_64-conda-linux-gnu-gcc"):
        (tmp_path / "bin" / name).write_text("")
    assert compiler_changes(tmp_path).final_values() == {
        "CC": str(tmp_path / "bin" / "gcc"),
        "CXX": str(tmp_path / "bin" / "g++"),
    }
