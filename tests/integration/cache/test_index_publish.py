"""A wheel with dependencies: installed with them, and published to a real pypiserver through twine."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.integration.cache.test_share import pip_show_version
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("plain_pip")]
DEP = "srcbuild-fixture-dep"


@pytest.fixture()
def machine_a(tmp_path: Path, pypiserver: tuple[str, Path]) -> tuple[Path, Path, Path]:
    """Machine A's cache with a torch wheel that needs ``srcbuild-fixture-dep>=1.0``, which only the
    loopback index has; returns (cache dir, recipe file, wheel)."""
    _, packages = pypiserver
    make_wheel(packages, name="srcbuild_fixture_dep", version="1.0", tag="py3-none-any", payload=b"dep")
    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(
        tmp_path / "dist", version="1.7.1", tag=host_tag(), payload=os.urandom(2048), requires=[f"{DEP}>=1.0"]
    )
    cache_dir = tmp_path / "machine-a"
    WheelCache(cache_dir).store(wheel, make_manifest(wheel, recipe, sass=(30,), ptx=(30,), platform=None))
    return cache_dir, recipe_file, wheel


def test_install_brings_the_dependencies_unless_no_deps(
    machine_a, pypiserver: tuple[str, Path], fresh_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_a, recipe_file, _wheel = machine_a
    index = pypiserver[0] + "simple/"
    base = ["install", "torch", "--recipe", str(recipe_file), "--cache-dir", str(cache_a)]
    alone = tmp_path / "alone"
    shutil.copytree(fresh_venv, alone, symlinks=True)
    assert main([*base, "--into", str(alone), "--no-deps"]) == 0
    assert pip_show_version(alone, "torch") == "1.7.1"
    assert pip_show_version(alone, DEP) is None
    capsys.readouterr()
    assert main([*base, "--into", str(fresh_venv), "--index-url", index]) == 0
    assert "installed torch-1.7.1-" in capsys.readouterr().out
    assert pip_show_version(fresh_venv, "torch") == "1.7.1"
    assert pip_show_version(fresh_venv, DEP) == "1.0"  # resolved from the loopback index by pip


def test_push_to_pypiserver_then_plain_pip_install(
    machine_a,
    pypiserver: tuple[str, Path],
    fresh_venv: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache_a, _recipe, wheel = machine_a
    url, packages = pypiserver
    monkeypatch.setenv("TWINE_USERNAME", "lab")  # pypiserver -a . accepts any
    monkeypatch.setenv("TWINE_PASSWORD", "lab")
    push = ["cache", "push", "--remote", f"upload+{url}", "--unsigned", "--cache-dir", str(cache_a)]
    assert main(push) == 0
    assert capsys.readouterr().out.endswith("1 sent\n")
    served = packages / wheel.name.replace("1.7.1", "1.7.1+cu92.sm30")  # labelled like `cache index` serves it
    assert served.is_file()
    assert main(push) == 0  # the index already has the same bytes
    assert capsys.readouterr().out.endswith("1 present\n")

    # any machine: plain pip, no srcbuild, against the index
    done = subprocess.run(
        [str(fresh_venv / "bin" / "python"), "-m", "pip", "install", "--index-url", url + "simple/", "torch"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert pip_show_version(fresh_venv, "torch") == "1.7.1+cu92.sm30"
    assert pip_show_version(fresh_venv, DEP) == "1.0"

    # someone replaces the file on the index: the next push sees other bytes and refuses
    served.write_bytes(served.read_bytes() + b"\0")
    assert main(push) == 7
    err = capsys.readouterr().err
    assert f"already has {served.name} with sha256 " in err
    page = urllib.request.urlopen(url + "simple/torch/", timeout=10).read().decode()
    assert served.name in page and hashlib.sha256(served.read_bytes()).hexdigest() in page


def test_an_upload_url_that_is_no_index_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.integration.cache.conftest import free_port

    url = f"upload+http://127.0.0.1:{free_port()}/"
    assert main(["cache", "push", "--remote", url, "--unsigned", "--cache-dir", str(tmp_path / "c")]) == 4
    assert "cannot read the project list" in capsys.readouterr().err
    assert main(["cache", "pull", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 4
