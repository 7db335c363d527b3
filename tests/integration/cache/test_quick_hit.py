"""A repeated ``srcbuild install`` hit reads the record of its decision (``srcbuild.quick_hit``), and
anything the decision read that changed sends it down the whole path again.

Each run is the real command (``python -m srcbuild install``) in a process of its own, with uv
installing a wheel stored in a real local cache into real venvs; the record lives under the test's
own ``XDG_CACHE_HOME``. Which path ran shows in the installer line srcbuild prints: the whole path
hands uv a requirements file in hash-checking mode, the record's path the wheel itself.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration


@dataclass
class World:
    root: Path
    recipe: Path
    cache: Path
    wheel: Path
    template: Path
    env: dict[str, str]
    count: int = 0

    def target(self) -> Path:
        self.count += 1
        target = self.root / f"venv-{self.count}"
        shutil.copytree(self.template, target, symlinks=True)
        return target

    def install(self, target: Path, **extra: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "srcbuild", "install", "torch", "--recipe", str(self.recipe)]
        argv += ["--into", str(target), "--cache-dir", str(self.cache), "--no-deps"]
        return subprocess.run(argv, env={**self.env, **extra}, cwd=self.root, capture_output=True, text=True)

    def records(self) -> list[Path]:
        return sorted((self.root / "xdg-cache" / "srcbuild" / "hits").glob("*.marshal"))


def installer_line(ran: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in ran.stderr.splitlines() if line.startswith("+ ")]
    assert len(lines) == 1, ran.stderr
    return lines[0]


def whole_path(ran: subprocess.CompletedProcess[str]) -> bool:
    """Whether the run decided anew (uv in hash-checking mode) rather than from the record."""
    return "--require-hashes" in installer_line(ran)


def installed(target: Path) -> dict[str, object]:
    found = list(target.glob("lib/python*/site-packages/torch-1.7.1.dist-info/direct_url.json"))
    assert len(found) == 1, f"torch 1.7.1 is not installed in {target}"
    return json.loads(found[0].read_text())


@pytest.fixture()
def world(tmp_path: Path, venv_template: Path) -> World:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.skip("no uv beside this interpreter or on PATH (it is one of srcbuild's dependencies)")
    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", "torch", "1.7.1", host_tag(), payload=b"kernels" * 1000)
    manifest = make_manifest(wheel, recipe, sass=(30, 35), commit=recipe.torch.commit or "a" * 40, platform=None)
    entry = WheelCache(tmp_path / "cache").store(wheel, manifest)
    (tmp_path / "bin").mkdir()  # on PATH from the start: a program put there later changes no variable
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SRCBUILD_", "UV_"))},
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "SRCBUILD_INSTALLER": "uv",
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
    }
    return World(tmp_path, recipe_file, tmp_path / "cache", entry.wheel_path, venv_template, env)


def test_a_repeated_hit_installs_from_its_record(world: World) -> None:
    first_target = world.target()
    first = world.install(first_target)
    assert first.returncode == 0, first.stderr
    assert whole_path(first) and len(world.records()) == 1

    second_target = world.target()
    second = world.install(second_target)
    assert second.returncode == 0, second.stderr
    line = installer_line(second)
    assert not whole_path(second) and str(world.wheel) in line and str(second_target / "bin" / "python") in line
    # the same lines as the whole path printed, for the other environment
    assert second.stdout == first.stdout.replace(str(first_target), str(second_target))
    rest = [s for s in second.stderr.splitlines() if not s.startswith("+ ")]
    assert rest == [s for s in first.stderr.splitlines() if not s.startswith("+ ")]
    assert installed(second_target) == installed(first_target)  # uv wrote the same install record

    # the installer line pastes: it installs the same wheel into a third environment
    third_target = world.target()
    argv = shlex.split(line[2:])
    argv[argv.index(str(second_target / "bin" / "python"))] = str(third_target / "bin" / "python")
    pasted = subprocess.run(argv, env=world.env, capture_output=True, text=True)
    assert pasted.returncode == 0, pasted.stderr
    assert installed(third_target) == installed(first_target)

    # uv's own variables are uv's: srcbuild reads none of them, and the record still holds
    again = world.install(world.target(), UV_NO_PROGRESS="1")
    assert again.returncode == 0 and not whole_path(again), again.stderr


def _edit_recipe(world: World) -> dict[str, str]:
    with world.recipe.open("a") as fh:
        fh.write("# edited\n")
    return {}


def _add_config(world: World) -> dict[str, str]:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "srcbuild" / "srcbuild.toml"  # absent when the record was made
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("# no settings\n")
    return {}


def _other_variable(world: World) -> dict[str, str]:
    return {"SRCBUILD_QUICK_HIT_TEST": "1"}


def _driver_appears(world: World) -> dict[str, str]:
    smi = world.root / "bin" / "nvidia-smi"
    smi.write_text("#!/bin/sh\nexit 9\n")  # a driver that does not answer: the fit check asks it each time
    smi.chmod(0o755)
    return {}


@pytest.mark.parametrize(
    "change", [_edit_recipe, _add_config, _other_variable, _driver_appears], ids=lambda f: f.__name__.strip("_")
)
def test_a_changed_input_decides_again(world: World, change: object) -> None:
    assert world.install(world.target()).returncode == 0
    extra = change(world)  # type: ignore[operator]
    ran = world.install(world.target(), **extra)
    assert ran.returncode == 0, ran.stderr
    assert whole_path(ran)


def test_another_interpreter_decides_again(world: World, tmp_path: Path) -> None:
    assert world.install(world.target()).returncode == 0
    copied = tmp_path / "venv-copies"  # its own python binary: another interpreter for the record
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(copied)], check=True)
    ran = world.install(copied)
    assert ran.returncode == 0, ran.stderr
    assert whole_path(ran) and installed(copied)


def test_a_changed_wheel_is_not_installed(world: World) -> None:
    assert world.install(world.target()).returncode == 0
    before = world.wheel.stat()
    data = bytearray(world.wheel.read_bytes())
    data[-30] ^= 0xFF  # same size, modification time put back: only the change time says it changed
    world.wheel.write_bytes(bytes(data))
    os.utime(world.wheel, ns=(before.st_atime_ns, before.st_mtime_ns))
    target = world.target()
    ran = world.install(target)
    # the whole path: the store's lookup hashes a wheel whose state changed, moves it aside, and misses
    assert ran.returncode == 9, ran.stderr
    assert "the manifest says" in ran.stderr and "moved aside" in ran.stderr
    assert not [line for line in ran.stderr.splitlines() if line.startswith("+ ")]
    assert not list(target.glob("lib/python*/site-packages/torch-1.7.1.dist-info"))


def test_a_record_not_yours_alone_or_damaged_is_not_read(world: World) -> None:
    assert world.install(world.target()).returncode == 0
    (record,) = world.records()
    record.chmod(0o664)  # another may write it: never read
    ran = world.install(world.target())
    assert ran.returncode == 0 and whole_path(ran), ran.stderr
    (record,) = world.records()  # the whole path wrote it again, this user's alone
    assert record.stat().st_mode & 0o077 == 0
    record.write_bytes(b"\x00not a record")
    ran = world.install(world.target())
    assert ran.returncode == 0 and whole_path(ran), ran.stderr
    ran = world.install(world.target())
    assert ran.returncode == 0 and not whole_path(ran), ran.stderr


def test_a_hit_that_printed_a_warning_is_not_recorded(world: World, tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(world.recipe))
    newer = make_wheel(tmp_path / "dist-newer", "torch", "1.7.1", host_tag(), payload=b"newer" * 1000)
    other = "b" * 40 if recipe.torch.commit != "b" * 40 else "c" * 40  # another build: another entry
    manifest = make_manifest(newer, recipe, sass=(30, 35), commit=other, platform=None, created=4102444800.0)
    damaged = WheelCache(world.cache).store(newer, manifest).wheel_path
    damaged.write_bytes(damaged.read_bytes()[:-10] + b"\0" * 10)  # the newest entry, damaged
    first = world.install(world.target())
    assert first.returncode == 0 and "moved aside" in first.stderr, first.stderr  # the older entry went in
    assert world.records() == []  # its warning is not one a record could say again
    assert whole_path(world.install(world.target())) and len(world.records()) == 1
    assert not whole_path(world.install(world.target()))
