"""The embedded backend for real: py-rattler, a local channel, no network, no conda."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from worlds.conda_channel import FakePackage, write_package

from srcbuild.cli import main
from srcbuild.envs import EnvSpec, choose_backend, read_lockfile
from srcbuild.envs.backends.base import CommandIO
from srcbuild.envs.backends.rattler_backend import RattlerBackend
from srcbuild.envs.channels import ChannelRouting
from srcbuild.envs.prefix import MARKER
from srcbuild.errors import EnvironmentError_
from srcbuild.paths import Paths


def io() -> CommandIO:
    """What the commands run with: this test's environment (fixtures may have changed it)."""
    return CommandIO(dict(os.environ), None)

pytestmark = pytest.mark.integration


def snapshot(prefix: Path) -> dict[str, bytes]:
    """Every file of an environment (bytes and mode), except srcbuild's own marker."""
    out = {}
    for path in sorted(prefix.rglob("*")):
        rel = str(path.relative_to(prefix))
        if rel == MARKER or path.is_dir():
            continue
        out[rel] = oct(path.stat().st_mode).encode() + b":" + path.read_bytes()
    return out


def create(recipe: Path, *args: str) -> int:
    return main(["env", "create", "--recipe", str(recipe), *args])


def test_create_from_recipe_solves_and_installs(
    write_recipe: Callable[..., Path], mirror_args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = write_recipe()
    assert create(recipe, *mirror_args) == 0
    out, err = capsys.readouterr()
    prefix = Path(out.strip().splitlines()[-1])
    assert prefix.parent == Paths.resolve(environ=os.environ).envs_dir
    assert "environment created with rattler (solved)" in err
    records = sorted(p.name for p in (prefix / "conda-meta").glob("*.json"))
    assert "python-3.8.10-h0_0_cpython.json" in records
    assert "cmake-3.27.9-h0_0.json" in records  # cmake <4 (build pin) picked the newest 3.x
    assert "numpy-1.19.5-py38_0.json" in records  # numpy <2
    assert not [r for r in records if r.startswith("magma")]  # MAGMA is a toolchain piece, not the environment's
    version = subprocess.run([prefix / "bin" / "cmake", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "cmake version 3.27.9"
    python = subprocess.run([prefix / "bin" / "python", "--version"], capture_output=True, text=True, check=True)
    assert python.stdout.strip() == "Python 3.8.10"
    marker = json.loads((prefix / MARKER).read_text())
    assert marker["backend"] == "rattler" and len(marker["spec_hash"]) == 64
    assert not list(prefix.parent.glob(".*.tmp-*"))


def test_lockfile_recreates_the_env_byte_for_byte_without_solving(
    write_recipe: Callable[..., Path],
    mirror_args: list[str],
    channels: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    recipe = write_recipe()
    assert main(["lock", "--recipe", str(recipe), *mirror_args]) == 0
    lockfile = recipe.with_name("demo-cu92.conda-lock.yml")
    assert capsys.readouterr().out.strip().endswith("demo-cu92.conda-lock.yml")
    lock = read_lockfile(lockfile)
    assert {p.name for p in lock.packages} >= {"python", "cmake", "libuv", "numpy", "mkl"}
    assert all(p.url.startswith("https://") for p in lock.packages)  # canonical, not the mirror

    assert create(recipe, "--ignore-lockfile", *mirror_args) == 0
    prefix = Path(capsys.readouterr().out.strip().splitlines()[-1])
    solved = snapshot(prefix)
    assert main(["env", "rm", "--recipe", str(recipe)]) == 0
    assert not prefix.exists()

    for repodata in channels["conda-forge"].rglob("repodata*"):  # a solve could not work any more
        repodata.unlink() if repodata.is_file() else None
    assert create(recipe, *mirror_args) == 0
    out, err = capsys.readouterr()
    assert out.strip().splitlines()[-1] == str(prefix)
    assert "environment created with rattler (from " in err
    assert snapshot(prefix) == solved


def test_tampered_package_is_refused_with_both_hashes(
    write_recipe: Callable[..., Path],
    mirror_args: list[str],
    channels: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    recipe = write_recipe()
    assert main(["lock", "--recipe", str(recipe), *mirror_args]) == 0
    expected = next(p for p in read_lockfile(recipe.with_name("demo-cu92.conda-lock.yml")).packages if p.name == "cffi")
    import hashlib

    evil = FakePackage("cffi", "1.14.6", build="py38_0", files={"lib/evil.sh": b"rm -rf ~\n"})
    tampered = write_package(evil, channels["conda-forge"])
    actual = hashlib.sha256(tampered.read_bytes()).hexdigest()
    capsys.readouterr()
    assert create(recipe, *mirror_args) == 8
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        f"error: package cffi 1.14.6 (cffi-1.14.6-py38_0.tar.bz2) has sha256 {actual}, "
        f"but the lockfile demo-cu92.conda-lock.yml records {expected.sha256}"
    )
    envs = Paths.resolve(environ=os.environ).envs_dir
    assert not [p for p in envs.iterdir() if p.is_dir() and not p.name.startswith(".")]  # no env was made
    assert not list(envs.glob(".*.tmp-*"))


def test_stale_lockfile_asks_for_a_new_lock(
    write_recipe: Callable[..., Path], mirror_args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = write_recipe()
    assert main(["lock", "--recipe", str(recipe), *mirror_args]) == 0
    write_recipe(conda=("hello",))  # the recipe changed after locking
    capsys.readouterr()
    assert create(recipe, *mirror_args) == 8
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: ") and "demo-cu92.conda-lock.yml is out of date" in err[0]
    assert err[1] == (
        "hint: re-run `srcbuild lock --recipe demo-cu92` to lock the current environment (or delete the lockfile)"
    )


def test_unsatisfiable_recipe_in_plain_words(
    write_recipe: Callable[..., Path], mirror_args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = write_recipe(python="3.9")
    assert create(recipe, *mirror_args) == 8
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: environment cannot be solved: no package in conda-forge matches `python 3.9.*`"
    assert err[1] == "hint: check the version of python the recipe asks for, or add a channel (or mirror) that has it"
    log = next(Paths.resolve(environ=os.environ).logs_dir.glob("env-*.log")).read_text()
    assert "Cannot solve the request because of" in log  # the raw report stays in the log


def test_unsatisfiable_dependency_names_package_and_constraint(channels: dict[str, Path], tmp_path: Path) -> None:
    spec = EnvSpec(python="3.8", conda=("cmake >=4",), channels=(channels["conda-forge"].as_uri(),))
    with pytest.raises(EnvironmentError_) as err:
        RattlerBackend().ensure(spec, tmp_path / "envs", None, None, io())
    assert err.value.message == (
        "environment cannot be solved: cannot install `cmake >=4`: cmake 4.0.2 needs `libuv >=1.48,<2`, "
        f"which no package in {channels['conda-forge'].as_uri()} provides"
    )
    conflict = EnvSpec(python="3.8", conda=("hello", "libgreet >=2"), channels=(channels["conda-forge"].as_uri(),))
    with pytest.raises(EnvironmentError_) as err:
        RattlerBackend().ensure(conflict, tmp_path / "envs", None, None, io())
    assert err.value.message == (
        "environment cannot be solved: cannot install `hello`: hello 0.1 needs `libgreet >=1.0,<2`, "
        "which conflicts with the requested `libgreet >=2`"
    )
    assert not (tmp_path / "envs" / spec.key).exists()


def test_unchanged_env_is_reused_without_solve_or_install(
    write_recipe: Callable[..., Path],
    mirror_args: list[str],
    channels: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    recipe = write_recipe()
    assert create(recipe, *mirror_args) == 0
    prefix = Path(capsys.readouterr().out.strip().splitlines()[-1])
    before = {p: p.stat().st_mtime_ns for p in prefix.rglob("*")}
    for path in channels.values():  # no channel at all: a solve or a fetch would fail
        path.rename(path.with_name(path.name + "-gone"))
    assert create(recipe, *mirror_args) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(prefix)
    assert err.startswith("environment unchanged (spec ")
    assert {p: p.stat().st_mtime_ns for p in prefix.rglob("*")} == before


def test_conda_compiler_package_sets_cc_and_cxx(channels: dict[str, Path], tmp_path: Path) -> None:
    spec = EnvSpec(
        python="3.8",
        conda=("gxx_linux-64 7.*",),
        channels=("conda-forge",),
        routing=ChannelRouting(mirrors=(("conda-forge", channels["conda-forge"].as_uri()),)),
    )
    env = choose_backend("rattler", spec, os.environ).ensure(spec, tmp_path / "envs", None, None, io())
    values = env.env_changes.final_values()
    assert values["CC"] == str(env.bin_dir / "x86_64-conda-linux-gnu-gcc")
    assert values["CXX"] == str(env.bin_dir / "x86_64-conda-linux-gnu-g++")
    assert values["CONDA_PREFIX"] == str(env.prefix)
    applied = env.env_changes.apply({"PATH": "/usr/bin"})
    assert applied["PATH"] == f"{env.bin_dir}:/usr/bin"
    run = subprocess.run([applied["CXX"]], capture_output=True, text=True, env=applied, check=True)
    assert run.stdout.strip() == "x86_64-conda-linux-gnu-g++ (conda) 7.5.0"


def _spawn_create(recipe: Path, mirror_args: list[str], extra_env: dict[str, str]) -> subprocess.Popen[str]:
    env = {**os.environ, **extra_env}
    return subprocess.Popen(
        [sys.executable, "-m", "srcbuild", "env", "create", "--recipe", str(recipe), *mirror_args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "the creation never reached the post-link script"
        time.sleep(0.05)


def test_killed_creation_is_cleaned_up_next_run(
    write_recipe: Callable[..., Path], mirror_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = write_recipe(conda=("slowlink",))
    marker = tmp_path / "linking"
    proc = _spawn_create(recipe, mirror_args, {"SRCBUILD_TEST_SLOW_LINK": str(marker)})
    _wait_for(marker, proc)
    os.killpg(proc.pid, 9)  # srcbuild and its post-link child, mid-creation
    proc.wait()
    envs = Paths.resolve(environ=os.environ).envs_dir
    leftovers = list(envs.glob(".*.tmp-*"))
    assert len(leftovers) == 1  # the half-made environment, never renamed into place
    assert not [p for p in envs.iterdir() if p.is_dir() and not p.name.startswith(".")]

    assert create(recipe, *mirror_args) == 0
    prefix = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert (prefix / "share" / "slowlink" / "README").is_file()
    assert not list(envs.glob(".*.tmp-*"))


def test_ctrl_c_during_creation_removes_the_temp_dir(
    write_recipe: Callable[..., Path], mirror_args: list[str], tmp_path: Path
) -> None:
    recipe = write_recipe(conda=("slowlink",))
    marker = tmp_path / "linking"
    proc = _spawn_create(recipe, mirror_args, {"SRCBUILD_TEST_SLOW_LINK": str(marker)})
    _wait_for(marker, proc)
    os.killpg(proc.pid, 2)  # Ctrl-C reaches the whole foreground group
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    envs = Paths.resolve(environ=os.environ).envs_dir
    assert not list(envs.glob(".*.tmp-*"))
    assert not [p for p in envs.iterdir() if p.is_dir() and not p.name.startswith(".")]


def test_env_rm_all(
    write_recipe: Callable[..., Path], mirror_args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = write_recipe()
    assert create(recipe, *mirror_args) == 0
    capsys.readouterr()
    assert main(["env", "rm", "--all"]) == 0
    envs = Paths.resolve(environ=os.environ).envs_dir
    assert capsys.readouterr().out == f"removed 1 environment(s) and the package caches from {envs}\n"
    assert not [p for p in envs.iterdir() if not p.name.endswith(".lock")]


def test_virtual_packages_cuda_from_the_recipe(channels: dict[str, Path], tmp_path: Path) -> None:
    channel = (channels["conda-forge"].as_uri(),)
    spec = EnvSpec(python="3.8", cuda="9.2", conda=("cudatoolkit 9.2.*",), channels=channel)
    env = RattlerBackend().ensure(spec, tmp_path / "envs", None, None, io())
    assert (env.prefix / "conda-meta" / "cudatoolkit-9.2.148-h0_0.json").is_file()
    cpu = EnvSpec(python="3.8", cuda=None, conda=("cudatoolkit 9.2.*",), channels=channel)
    with pytest.raises(EnvironmentError_) as err:
        RattlerBackend().ensure(cpu, tmp_path / "envs", None, None, io())
    assert err.value.message == (
        "environment cannot be solved: cannot install `cudatoolkit 9.2.*`: cudatoolkit 9.2.148 needs "
        f"`__cuda >=9.2`, which no package in {channel[0]} provides"
    )


def test_a_new_lockfile_replaces_the_env_and_the_same_one_reuses_it(
    write_recipe: Callable[..., Path],
    mirror_args: list[str],
    channels: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    recipe = write_recipe()
    assert create(recipe, *mirror_args) == 0  # solved
    prefix = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(["lock", "--recipe", str(recipe), *mirror_args]) == 0  # the same packages, now locked
    capsys.readouterr()
    assert create(recipe, *mirror_args) == 0
    assert capsys.readouterr().err.startswith("environment unchanged")

    # the channel gains cmake 3.28: a new lock pins it, and the next create follows the lockfile
    write_package(
        FakePackage("cmake", "3.28.6", depends=("libuv >=1.44,<2",), files={"bin/cmake": b"#!/bin/sh\necho 3.28\n"}),
        channels["conda-forge"],
    )
    from worlds.conda_channel import make_channel

    make_channel(channels["conda-forge"], [])  # re-index
    assert main(["lock", "--recipe", str(recipe), *mirror_args]) == 0
    capsys.readouterr()
    assert create(recipe, *mirror_args) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(prefix)  # same spec, same place
    assert err.startswith("environment created with rattler (from ")
    assert (prefix / "conda-meta" / "cmake-3.28.6-h0_0.json").is_file()
    assert not (prefix / "conda-meta" / "cmake-3.27.9-h0_0.json").exists()


def test_pip_step_of_a_conda_env(tmp_path: Path, offline_pip: Path) -> None:
    from worlds.conda_channel import host_python_packages, make_channel

    channel = make_channel(tmp_path / "hostpy", host_python_packages())
    python = ".".join(str(v) for v in sys.version_info[:2])
    spec = EnvSpec(python=python, pip=("srcbuild-demo-greet==1.0",), channels=(channel.as_uri(),))
    assert spec.conda_specs == (f"python {python}.*", "pip")
    env = RattlerBackend().ensure(spec, tmp_path / "envs", None, tmp_path / "env.log", io())
    run = subprocess.run(
        [env.python, "-c", "import sys, srcbuild_demo_greet as g; print(sys.prefix); print(g.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    prefix, module = run.stdout.splitlines()
    assert Path(prefix) == env.prefix  # installed into the environment, not the interpreter it runs
    assert Path(module).is_relative_to(env.prefix)
    assert not list((tmp_path / "envs").glob(".*.tmp-*"))


def test_two_creations_of_one_env_wait_for_each_other(
    write_recipe: Callable[..., Path], mirror_args: list[str], tmp_path: Path
) -> None:
    recipe = write_recipe(conda=("slowlink",))
    marker, release = tmp_path / "linking", tmp_path / "release"
    first = _spawn_create(
        recipe, mirror_args, {"SRCBUILD_TEST_SLOW_LINK": str(marker), "SRCBUILD_TEST_SLOW_LINK_RELEASE": str(release)}
    )
    _wait_for(marker, first)
    second = _spawn_create(recipe, mirror_args, {})
    time.sleep(1.0)
    assert second.poll() is None  # waiting for the first creation's lock
    release.touch()
    out1, _ = first.communicate(timeout=60)
    out2, _ = second.communicate(timeout=60)
    assert first.returncode == 0 and second.returncode == 0, out1 + out2
    assert "environment created with rattler" in out1
    assert "environment unchanged" in out2  # the second one used what the first one made
    assert out1.strip().splitlines()[-1] == out2.strip().splitlines()[-1]


def test_unreachable_channel_names_it(tmp_path: Path) -> None:
    missing = (tmp_path / "no-such-channel").as_uri()
    spec = EnvSpec(python="3.8", conda=("cmake",), channels=(missing,))
    with pytest.raises(EnvironmentError_) as err:
        RattlerBackend().ensure(spec, tmp_path / "envs", None, None, io())
    assert err.value.message == (
        f"cannot read the channels {missing}: could not find subdir 'noarch' in channel '{missing}/'"
    )
    assert err.value.hint == (
        "check the network or give a reachable mirror with --channel-mirror NAME=URL or --channel-alias URL"
    )


def test_prefix_placeholders_get_the_final_prefix(channels: dict[str, Path], tmp_path: Path) -> None:
    spec = EnvSpec(python="3.8", conda=("libgreet-dev",), channels=(channels["conda-forge"].as_uri(),))
    env = RattlerBackend().ensure(spec, tmp_path / "envs", None, None, io())
    # made in a temp dir, renamed into place: the file names where the environment is now
    assert (
        env.prefix / "lib" / "pkgconfig" / "greet.pc"
    ).read_text() == f"prefix={env.prefix}\nlibdir=${{prefix}}/lib\n"


def test_a_portable_solve_follows_another_machines_glibc(tmp_path: Path) -> None:
    """``mirror create --platform manylinux2014_x86_64`` solves for glibc 2.17: the build a 2.17
    machine can install, where the lockfile default (2.28) takes the newer one."""
    from worlds.conda_channel import make_channel

    from srcbuild.envs.solve import solve_spec

    channel = make_channel(tmp_path / "channel", [
        FakePackage("libnew", "1.0", depends=("__glibc >=2.17",)),
        FakePackage("libnew", "2.0", depends=("__glibc >=2.28",)),
        FakePackage("libold", "1.0", depends=("__glibc >=2.28",)),
    ])
    spec = EnvSpec(python="3.8", cuda=None, conda=(), channels=(channel.as_uri(),))
    cache = tmp_path / "repodata"
    assert [p.version for p in solve_spec(spec, cache, for_this_host=False, specs=["libnew"])] == ["2.0"]
    assert [p.version for p in solve_spec(spec, cache, for_this_host=False, specs=["libnew"], glibc="2.17")] == [
        "1.0"
    ]
    with pytest.raises(EnvironmentError_) as err:
        solve_spec(spec, cache, for_this_host=False, specs=["libold"], glibc="2.17")
    assert "`__glibc >=2.28`" in err.value.message
