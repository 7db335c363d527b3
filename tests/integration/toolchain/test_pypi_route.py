"""The ``pypi`` provider against an index that lacks its wheel (real pip, an empty index on disk):
the failed step is named, and for a cuDNN NVIDIA's archive also serves, so is the command that
takes it from there. The wheels themselves are provisioned in tests/real/test_toolchain_real.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.cli import main


@pytest.fixture
def empty_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    index = tmp_path / "simple"
    index.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # no index, find-links or constraints of the machine's
    monkeypatch.setenv("PIP_INDEX_URL", index.as_uri())
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    for var in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONSTRAINT"):
        monkeypatch.delenv(var, raising=False)
    return index


@pytest.mark.usefixtures("empty_index")
def test_a_cudnn_the_index_lacks_names_nvidias_archive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install", "cudnn", "9.10", "--cuda", "12.6", "--arch", "6.1", "--from", "pypi"]) == 5
    err = capsys.readouterr().err
    assert "error: pip download nvidia-cudnn-cu12==9.10.2.21 failed (exit 1): " in err
    assert "No matching distribution found for nvidia-cudnn-cu12==9.10.2.21" in err
    assert (
        "NVIDIA's archive serves it too: `srcbuild toolchain install cudnn 9.10 --cuda 12.6 --from nvidia` "
        "(for a build: `export SRCBUILD_TOOLCHAIN_PROVIDERS=nvidia`)"
    ) in err


@pytest.mark.usefixtures("empty_index")
def test_a_failed_route_gives_way_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # no --from: the index lacks the wheel, so NVIDIA's archive is tried next (a mirror directory
    # that lacks it too, so nothing is downloaded from NVIDIA's site)
    (tmp_path / "nvidia").mkdir()
    monkeypatch.setenv("SRCBUILD_NVIDIA_MIRROR", str(tmp_path / "nvidia"))
    assert main(["toolchain", "install", "cudnn", "9.10", "--cuda", "12.6", "--arch", "6.1"]) == 4
    err = capsys.readouterr().err
    assert "route pypi failed: pip download nvidia-cudnn-cu12==9.10.2.21 failed (exit 1): " in err
    assert "; using route nvidia\n" in err
    assert "error: download failed: file://" in err


@pytest.mark.usefixtures("empty_index")
def test_an_nccl_the_index_lacks_names_only_the_log(capsys: pytest.CaptureFixture[str]) -> None:
    # NVIDIA's archives hold no NCCL: the hint names the log alone
    assert main(["toolchain", "install", "nccl", "2.14", "--cuda", "11.8", "--arch", "6.1", "--from", "pypi"]) == 5
    err = capsys.readouterr().err
    assert "error: pip download nvidia-nccl-cu11==2.14.3 failed (exit 1): " in err
    assert "hint: see " in err and "--from nvidia" not in err
