"""``srcbuild install EXTENSION --recipe R --into ENV`` from the signed remotes torch wheels share:
a directory, a loopback S3 server and ``srcbuild cache serve``'s HTTP index. The entry pushed is
an extension's (its key names the torch it was built against); the target environment's torch
is a small stand-in package (``torch.__version__``, ``torch.version.cuda``): what install reads."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from srcbuild.cache.key import ResolvedFacts
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.ext.key import ExtKeyInputs, ext_fingerprint
from srcbuild.files import sha256_file
from srcbuild.host.platform import host_platform_tag as platform_tag
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.integration.cache.conftest import make_key
from tests.unit.cache.synthetic import make_wheel

pytestmark = pytest.mark.integration

RECIPE = ('name = "k80-ext"\n[torch]\ntag = "v2.0.1"\n[toolchain]\npython = "3.11"\ngcc = "11"\ncuda = "11.8"\n'
          '[gpu]\narch = ["3.5", "3.7"]\n')
ABI = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TORCH = "2.0.1+cu117"


def words(text: str) -> str:
    return " ".join(text.split())


def built_cache(tmp_path: Path, recipe_file: Path, name: str, torch: str = TORCH) -> Path:
    """A machine's cache holding torch_scatter built (as ``srcbuild ext`` stores it) against ``torch``."""
    recipe = RecipeCatalog(Paths.resolve(work_dir=tmp_path / "w", cache_dir=tmp_path / "c", environ={})).load(
        str(recipe_file)
    )
    tag = f"{ABI}-{ABI}-{platform_tag()}"
    wheel = make_wheel(tmp_path / f"dist-{name}", "torch_scatter", "2.1.2", tag, payload=name.encode())
    inputs = ExtKeyInputs.create(
        name="torch-scatter", source={"sdist": "torch_scatter-2.1.2.tar.gz", "sha256": "ab" * 32},
        against="sha256:" + "cd" * 32, torch=torch, torch_cuda="11.7", build_env={"FORCE_CUDA": "1"}, options=(),
        python_abi=ABI, gcc="11", cuda="11.8", platform=platform_tag(),
    )
    manifest = Manifest(
        package="torch_scatter", version="2.1.2", wheel=wheel.name, sha256=sha256_file(wheel),
        fingerprint=ext_fingerprint(inputs), key_inputs=inputs.to_json(),
        resolved=ResolvedFacts.create(gcc_version="11.4.0", nvcc_version="11.8.89", arch=("3.5", "3.7")).to_json(),
        recipe=recipe.to_json(), toolchain={"gcc": "11.4.0", "cuda": "11.8.89", "torch": torch},
        sass=(35, 37), ptx=(), size=wheel.stat().st_size, created=time.time(),
    )
    cache = tmp_path / f"cache-{name}"
    WheelCache(cache).store(wheel, manifest)
    return cache


@pytest.fixture()
def target(fresh_venv: Path, tmp_path: Path) -> Path:
    """An environment whose ``import torch`` says 2.0.1+cu117, CUDA 11.7."""
    stand_in = make_wheel(
        tmp_path / "torch-dist", "torch", "2.0.1+cu117", "py3-none-any",
        extra={"torch/__init__.py": b'from . import version\n__version__ = "2.0.1+cu117"\n',
               "torch/version.py": b'cuda = "11.7"\n'},
    )
    python = str(fresh_venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(stand_in)], check=True)
    return fresh_venv


def install(recipe: Path, venv: Path, cache: Path, *remote: str) -> list[str]:
    argv = ["install", "torch-scatter", "--recipe", str(recipe), "--into", str(venv), "--cache-dir", str(cache)]
    return argv + [arg for url in remote for arg in ("--remote", url)]


def imports(venv: Path) -> str:
    code = "import torch_scatter, torch; print(torch_scatter.__version__, torch.__version__)"
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr


def test_from_a_directory_remote_signed_and_refused_unsigned(
    tmp_path: Path, signer: Path, target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = tmp_path / "k80-ext.toml"
    recipe.write_text(RECIPE)
    share, evil_share = tmp_path / "share", tmp_path / "evil-share"
    share.mkdir()
    evil_share.mkdir()
    built = built_cache(tmp_path, recipe, "alice")
    assert main(["cache", "push", "--remote", str(share), "--cache-dir", str(built)]) == 0
    mallory = make_key(tmp_path / "keys", "mallory")
    evil = built_cache(tmp_path, recipe, "mallory")
    assert main(["cache", "push", "--signing-key", str(mallory), "--remote", str(evil_share),
                 "--cache-dir", str(evil)]) == 0  # fmt: skip
    capsys.readouterr()

    # nothing local and no remote: exit 9, naming the build and --remote
    assert main(install(recipe, target, tmp_path / "empty")) == 9
    err = words(capsys.readouterr().err)
    assert "no cached torch-scatter of recipe k80-ext built against torch 2.0.1+cu117" in err
    assert "srcbuild ext torch-scatter --recipe" in err and "--remote" in err

    # signed by an untrusted key: refused (exit 7), nothing installed or stored
    assert main(install(recipe, target, tmp_path / "b1", str(evil_share))) == 7
    assert "not signed by a trusted key" in words(capsys.readouterr().err)
    assert list(WheelCache(tmp_path / "b1").entries()) == []
    assert "No module named 'torch_scatter'" in imports(target)

    # signed by alice, whom this user trusts: pulled, checked, installed next to the torch there
    assert main(install(recipe, target, tmp_path / "b2", str(evil_share), str(share))) == 0
    out = words(capsys.readouterr().out)
    assert out.startswith(f"installed torch_scatter-2.1.2-{ABI}-{ABI}-")
    assert f"(built against torch {TORCH}) from {share} into {target}/bin/python" in out
    assert imports(target) == f"2.1.2 {TORCH}"
    assert [e.manifest.wheel for e in WheelCache(tmp_path / "b2").entries()] == [out.split()[1]]

    # the next install finds it locally
    assert main([*install(recipe, target, tmp_path / "b2"), "--json"]) == 0
    assert '"origin": "local"' in capsys.readouterr().out


def test_another_torch_in_the_environment_finds_nothing_on_the_remote(
    tmp_path: Path, signer: Path, target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = tmp_path / "k80-ext.toml"
    recipe.write_text(RECIPE)
    share = tmp_path / "share"
    share.mkdir()
    built = built_cache(tmp_path, recipe, "alice", torch="2.7.1+cu118")
    assert main(["cache", "push", "--remote", str(share), "--cache-dir", str(built)]) == 0
    capsys.readouterr()
    assert main(install(recipe, target, tmp_path / "b", str(share))) == 9
    assert f"built against torch {TORCH} for {ABI} in {tmp_path / 'b'}, {share}" in words(capsys.readouterr().err)


def test_from_s3_and_from_an_http_index(
    tmp_path: Path, signer: Path, target: Path, s3_bucket: str, moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    recipe = tmp_path / "k80-ext.toml"
    recipe.write_text(RECIPE)
    built = built_cache(tmp_path, recipe, "alice")
    remote = f"s3://{s3_bucket}/lab"
    monkeypatch.setenv("SRCBUILD_S3_ENDPOINT_URL", moto_endpoint)
    assert main(["cache", "push", "--remote", remote, "--cache-dir", str(built)]) == 0
    capsys.readouterr()
    assert main(install(recipe, target, tmp_path / "from-s3", remote)) == 0
    assert f"from {remote} into" in words(capsys.readouterr().out)
    assert imports(target) == f"2.1.2 {TORCH}"

    subprocess.run([str(target / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "torch_scatter"], check=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "srcbuild", "cache", "serve", "--port", "0", "--cache-dir", str(built)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ.copy(),
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().rsplit(" at ", 1)[1].strip()[: -len("simple/")]
        assert main(install(recipe, target, tmp_path / "from-http", url)) == 0
        assert f"from {url} into" in words(capsys.readouterr().out)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert imports(target) == f"2.1.2 {TORCH}"
