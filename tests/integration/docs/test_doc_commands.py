"""Every ``srcbuild`` command README.md and docs/ show that works offline is run, and succeeds.

The commands run in a directory holding the files the docs name (``lspci.txt``, ``smi.txt``,
``version.txt``, ``gpu.txt``, ``my-recipe.toml``), taken from recorded machine fixtures. Commands
that build, download or install (``torch``, ``install``, ``lock``, ``env create``, ``toolchain
install``, ``mirror create`` but its dry run, ``verify`` of a wheel or mirror the docs only name,
``smoke``, ``knowledge scan`` of upstream wheels, ``knowledge refresh`` but its dry run) are parsed by
tests/unit/test_readme.py and exercised by their own integration tests instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from doc_commands import DocCommand, doc_commands

from srcbuild.cli import main
from srcbuild.packages import PACKAGES

pytestmark = pytest.mark.integration

MACHINES = Path(__file__).resolve().parents[2] / "fixtures" / "machines"
BUILDS = {*PACKAGES, "ext", "install", "lock", "verify", "smoke"}  # a build command per package


FETCHES = {("env", "create"), ("toolchain", "install"), ("toolchain", "rm"), ("container", "build")}
# reads (or downloads) upstream wheels of hundreds of MB; tests/real/test_knowledge_scan.py runs it
FETCHES |= {("knowledge", "scan")}
# sharing needs a signing key, a share and the signers' .pub files the docs only name; the cache
# integration tests run these commands on real keys, directories, S3 and HTTP remotes
SHARING = {"push", "pull", "trust", "serve", "index"}


def runs_offline(command: DocCommand) -> bool:
    if command.argv[0] == "cache" and len(command.argv) > 1 and command.argv[1] in SHARING:
        return False
    if tuple(command.argv[:2]) == ("plan", "ext"):  # reads a torch and the package index: tests/real/test_ext.py
        return False
    if command.argv[:2] == ("mirror", "create") and "--dry-run" not in command.argv:
        return False  # fetches; tests/integration/mirror makes mirrors (and verifies them)
    if command.argv[:2] == ("mirror", "verify"):  # of a mirror the docs only name
        return False
    if "--gpu-check" in command.argv:  # pulls a CUDA image; tests/unit/container covers the verdicts
        return False
    if command.argv[:2] == ("knowledge", "refresh") and "--dry-run" not in command.argv:
        # downloads and writes srcbuild's own tables (index.toml's date is today's): it is run against
        # a copy of them and a local index in tests/integration/knowledge/test_refresh_local_index.py
        return False
    return command.argv[0] not in BUILDS and command.argv[:2] not in FETCHES


OFFLINE = [c for c in doc_commands() if runs_offline(c)]


@pytest.fixture
def doc_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    k80 = MACHINES / "k80-server"
    shutil.copy(MACHINES / "gt750m-laptop" / "lspci.txt", tmp_path / "lspci.txt")
    shutil.copy(MACHINES / "gt750m-laptop" / "lspci.txt", tmp_path / "gpu.txt")
    shutil.copy(k80 / "nvidia-smi.txt", tmp_path / "smi.txt")
    shutil.copy(k80 / "proc-driver-version.txt", tmp_path / "version.txt")
    (tmp_path / "my-recipe.toml").write_text('extends = "kepler-cu92"\n[build]\nenv = { USE_NCCL = "0" }\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_most_documented_commands_run_here() -> None:
    assert len(OFFLINE) >= 15


@pytest.mark.parametrize("command", OFFLINE, ids=lambda c: f"{c.file}:{c.line}")
def test_documented_command_succeeds(
    command: DocCommand, doc_files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(list(command.argv))
    out, err = capsys.readouterr()
    if code == 4 and command.argv[0] == "plan":
        # plan refuses what the build would refuse: a toolkit this machine lacks, with the command
        # that provisions it
        assert "hint: run `srcbuild toolchain install --recipe " in err, err
        return
    assert code == 0, f"{command.where} exited {code}:\n{err}"
    assert out.strip(), f"{command.where} printed nothing"
