"""``toolchain install`` checks every argument before anything is fetched: a typo is exit 2 naming
the option, with nothing downloaded and no prefix made."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srcbuild.cli import main
from srcbuild.cli.toolchain import check_install_arguments
from srcbuild.errors import UsageError

DIGITS = "(digits and dots, like 11.8 or 2.9.9)"


@pytest.mark.parametrize(
    ("argv", "error"),
    [(["cudnn", "8.5", "--cuda", "11.8", "--arch", "3.O"],
      "error: --arch: '3.O' is not a compute capability (expected a form like \"3.5\")"),
     (["cudnn", "8.5", "--cuda", "11.8", "--arch", "3.7", "--arch", "sm_50"],
      "error: --arch: 'sm_50' is not a compute capability; write it as \"5.0\""),
     (["cudnn", "8.5", "--cuda", "11.x"], "error: --cuda: '11.x' is not a CUDA version (like 11.8)"),
     (["cuda", "11.8; rm -rf ~"], f"error: VERSION: '11.8; rm -rf ~' is not a version {DIGITS}"),
     (["cuda", "１１.８"], f"error: VERSION: '１１.８' is not a version {DIGITS}"),
     (["mpi", "4.1", "--mpi", "lam"], "error: --mpi: 'lam' is not openmpi or mpich"),
     (["gcc", "11", "--sysroot", "2.17/../x"], "error: --sysroot: '2.17/../x' is not a glibc version (like 2.17)")],
)  # fmt: skip
def test_a_bad_argument_is_refused_before_any_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    monkeypatch.setenv("SRCBUILD_TOOLCHAIN_DIR", str(tmp_path / "toolchains"))
    assert main(["toolchain", "install", *argv]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == error
    assert err.splitlines()[1].startswith("hint: srcbuild toolchain install ")
    assert not (tmp_path / "toolchains").exists()
    assert not list(tmp_path.rglob("*.whl")) and not list(tmp_path.rglob("*.tar*"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
def test_any_arch_text_is_accepted_or_a_usage_error(arch: str) -> None:
    try:
        check_install_arguments("cudnn", "8.5", "11.8", "openmpi", (arch,), None)
    except UsageError as exc:
        assert exc.message.startswith("--arch: ")
