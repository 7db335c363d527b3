"""Two machines whose glibc differs share one fingerprint; each gets the newest wheel it can run.

The wheels hold real shared libraries built here with gcc: one calls ``memcpy`` (GLIBC_2.14), the
other ``pthread_create`` (GLIBC_2.34: glibc 2.34 moved it into libc with a new version). Every
glibc a build host may have (Ubuntu 22.04: 2.35, Debian 12: 2.36, Ubuntu 24.04: 2.39) links them
to those versions. The machines are recorded descriptions.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.verify.symbols import glibc_text, wheel_glibc
from tests.conftest import require_tool
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration


def shared_library(directory: Path, name: str, body: str) -> bytes:
    gcc = shutil.which("gcc")
    require_tool("gcc", gcc)
    src = directory / f"{name}.c"
    src.write_text(body)
    out = directory / f"lib{name}.so"
    subprocess.run([str(gcc), "-shared", "-fPIC", "-O1", "-o", str(out), str(src)], check=True)
    return out.read_bytes()


def entry(cache: WheelCache, tmp: Path, recipe, name: str, body: str, commit: str, created: float) -> Manifest:
    lib = shared_library(tmp, name, body)
    wheel = make_wheel(tmp / name, version="1.7.1", tag=host_tag(), extra={f"torch/lib/lib{name}.so": lib})
    base = make_manifest(wheel, recipe, sass=(30,), ptx=(30,), platform=None, commit=commit, created=created)
    manifest = dataclasses.replace(base, glibc_needed=glibc_text(wheel_glibc(wheel)))  # as the cache step does
    cache.store(wheel, manifest)
    return manifest


def test_each_machine_gets_the_newest_wheel_its_glibc_runs(
    tmp_path: Path, fresh_venv: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    cache_a = WheelCache(tmp_path / "machine-a")
    copy = "#include <string.h>\nvoid c(char *d, const char *s, unsigned long n) { memcpy(d, s, n); }\n"
    old = entry(cache_a, tmp_path, recipe, "old", copy, "a" * 40, 1000.0)
    thread = "#include <pthread.h>\nint t(pthread_t *p, void *(*f)(void *)) { return pthread_create(p, 0, f, 0); }\n"
    new = entry(cache_a, tmp_path, recipe, "new", thread, "b" * 40, 2000.0)
    assert (old.glibc_needed, new.glibc_needed) == ("2.14", "2.34")  # measured from the symbol versions
    assert old.fingerprint == new.fingerprint and "glibc" not in old.key_inputs["platform"]
    # verify states the same and the manylinux tag those symbol versions allow
    wheel = cache_a.get(new).wheel_path  # type: ignore[union-attr]
    main(["verify", str(wheel), "--arch", "3.0", "--no-cross-check", "--json"])  # no kernels here: exit 6
    report = json.loads(capsys.readouterr().out)
    assert (report["glibc_needed"], report["manylinux"]) == ("2.34", "manylinux_2_34_x86_64")
    share = tmp_path / "share"
    share.mkdir()
    assert main(["cache", "push", "--unsigned", "--remote", str(share), "--cache-dir", str(cache_a.root)]) == 0
    capsys.readouterr()

    machines = tmp_path / "machines"
    machines.mkdir()
    (machines / "ubuntu-24.04.json").write_text(json.dumps({"machine": "x86_64", "glibc": "2.39"}))
    (machines / "debian-11.json").write_text(json.dumps({"machine": "x86_64", "glibc": "2.31"}))
    picked = {}
    for name in ("ubuntu-24.04", "debian-11"):
        monkeypatch.setenv("SRCBUILD_MACHINE_FILE", str(machines / f"{name}.json"))
        venv = tmp_path / f"venv-{name}"
        shutil.copytree(fresh_venv, venv, symlinks=True)
        args = ["install", "torch", "--recipe", str(recipe_file), "--into", str(venv), "--no-deps", "--json"]
        rc = main([*args, "--trust-unsigned", "--remote", str(share), "--cache-dir", str(tmp_path / f"cache-{name}")])
        assert rc == 0
        capsys.readouterr()
        libs = sorted(p.name for p in venv.glob("lib/python*/site-packages/torch/lib/*.so"))
        picked[name] = libs
    assert picked == {"ubuntu-24.04": ["libnew.so"], "debian-11": ["libold.so"]}

    # pulling the recipe's wheels for the older machine leaves out the one it cannot run
    monkeypatch.setenv("SRCBUILD_MACHINE_FILE", str(machines / "debian-11.json"))
    pull = ["cache", "pull", "--trust-unsigned", "--remote", str(share), "--recipe", str(recipe_file)]
    assert main([*pull, "--cache-dir", str(tmp_path / "cache-pull")]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())
    assert "skipped torch-1.7.1" in words and "needs glibc 2.34" in words
    assert out.endswith("1 fetched, 1 skipped\n")
