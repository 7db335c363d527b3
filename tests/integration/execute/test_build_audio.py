"""torchaudio, the third package: ``srcbuild torchaudio`` builds torch's pipeline, then its own, and
``srcbuild install torchaudio`` installs it beside that torch."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from srcbuild.verify.fatbin import scan_elf
from tests.integration.execute.conftest import CP, REPO_ROOT, Srcbuild, recipe

pytestmark = pytest.mark.integration

RECIPE = "world-kepler-cu118-audio"
VERSION = "2.5.1+cu118.sm35.sm37"


def _sms(data: bytes) -> list[tuple[str, int]]:
    return sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))})


def test_torchaudio_builds_after_torch_and_installs_beside_it(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    venv = tmp_path / "build-env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    failed = srcbuild_118.run("torchaudio", RECIPE, env_prefix=venv, env={"FAKE_AUDIO_FAIL": "1"})
    assert failed.rc != 0, failed.out
    # the two pipelines in order: torchaudio's preflight, torch's whole pipeline, then its own steps
    assert failed.out.index("srcbuild torchaudio 2.5.1") < failed.out.index("srcbuild torch 2.5.1")
    assert failed.out.index("Build torch 2.5.1") < failed.out.index("Build torchaudio 2.5.1")
    assert f"Install torch {VERSION} into the build environment" in failed.out
    assert "FAKE_AUDIO_FAIL=1: this build fails" in failed.out

    ran = srcbuild_118.run("torchaudio", RECIPE, "--resume", env_prefix=venv)
    assert ran.rc == 0, ran.out
    assert "srcbuild torch 2.5.1" not in ran.out  # torch's pipeline ran in the failed run: not again
    assert "Torch wheel of recipe" in ran.out and "done in an earlier run" in ran.out
    wheel = Path(ran.last_line)
    assert wheel.name == f"torchaudio-{VERSION}-{CP}-{CP}-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"torchaudio-{VERSION}.dist-info/METADATA").decode()
        version_py = zf.read("torchaudio/version.py").decode()
        cuda = zf.read("torchaudio/lib/libtorchaudio.so")
    assert f"Requires-Dist: torch=={VERSION}" in meta  # PYTORCH_VERSION: the recipe's own torch
    assert f"torch_version = '{VERSION}'" in version_py  # built against the installed torch
    assert _sms(cuda) == [("ptx", 37), ("sass", 35), ("sass", 37)]  # USE_CUDA=1, the recipe's archs
    # BUILD_SOX=0 and USE_FFMPEG=0 reached setup.py (the fixture stops otherwise, as audio does offline)
    log = next((srcbuild_118.work_dir / "builds" / f"{RECIPE}-torchaudio" / "logs").glob("*-build.log"))
    assert "Building against torch" in log.read_text()

    again = srcbuild_118.run("torchaudio", RECIPE, env_prefix=venv)
    assert again.rc == 0 and "cache hit: torchaudio-2.5.1" in again.out

    target = tmp_path / "target"
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    for package in ("torch", "torchaudio"):
        argv = [sys.executable, "-m", "srcbuild", "install", package, "--recipe", recipe(RECIPE), "--into", str(target)]
        done = subprocess.run(argv, env=srcbuild_118.env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith(f"installed {package}-{VERSION}-"), done.stdout
    python = target / "bin" / "python"
    shown = subprocess.run(
        [str(python), "-c", "import torchaudio; print(torchaudio.__version__, torchaudio.torch_version)"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    )
    assert shown.stdout.split() == [VERSION, VERSION]
