"""Open MPI of the pinned version from a local conda channel (a package around the host's Open MPI):
provisioned into its own prefix, and found by the host probe for USE_MPI=1 builds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.host.mpi import list_mpi
from srcbuild.paths import Paths
from tests.conftest import require_tool
from tests.worlds.conda_channel import channel_url, make_channel
from tests.worlds.conda_compiler import host_openmpi_package


def test_openmpi_of_the_pinned_version_is_provisioned(
    tmp_path: Path, mpicc: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_tool("Open MPI's opal_wrapper", shutil.which("opal_wrapper") or Path("/usr/bin/opal_wrapper").exists())
    package = host_openmpi_package()
    channel = make_channel(tmp_path / "conda-forge", [package])
    monkeypatch.setenv("SRCBUILD_CHANNEL_MIRRORS", f"conda-forge={channel_url(channel)}")
    minor = ".".join(package.version.split(".")[:2])
    assert main(["toolchain", "install", "mpi", minor, "--mpi", "openmpi"]) == 0
    prefix = Paths.resolve(environ=os.environ).toolchain_dir / f"openmpi-{minor}-conda"
    assert f"openmpi {minor} (conda, " in capsys.readouterr().out
    [found] = list_mpi({"PATH": ""}, root=tmp_path, extra_dirs=[prefix / "bin"])
    assert (found.implementation, found.version, found.mpicc) == ("openmpi", package.version, prefix / "bin" / "mpicc")
    assert main(["toolchain", "install", "mpi", minor, "--mpi", "openmpi"]) == 0
    assert "already provisioned" in capsys.readouterr().out
