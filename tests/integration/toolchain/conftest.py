"""The NVIDIA stand-in site (built once per session from the real CUDA 11.8 home), local conda
channels, and ``toolchain install --json`` as a call."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from srcbuild.cli import main
from srcbuild.paths import Paths
from tests.worlds.conda_channel import FakePackage, channel_url, make_channel
from tests.worlds.nvidia_site import Site, SiteServer, build_site


@pytest.fixture(scope="session")
def nvidia_site(tmp_path_factory: pytest.TempPathFactory, cuda118_home: Path) -> Site:
    base = tmp_path_factory.mktemp("nvidia-site")
    return build_site(base / "site", cuda118_home, base / "data")


@pytest.fixture
def site_server(nvidia_site: Site, monkeypatch: pytest.MonkeyPatch) -> Iterator[SiteServer]:
    """The site on 127.0.0.1 as SRCBUILD_NVIDIA_MIRROR, its checksums as SRCBUILD_TOOLCHAIN_DATA."""
    with SiteServer(nvidia_site.root) as server:
        monkeypatch.setenv("SRCBUILD_NVIDIA_MIRROR", server.url)
        monkeypatch.setenv("SRCBUILD_TOOLCHAIN_DATA", str(nvidia_site.data_dir))
        yield server


def serve_channel(
    monkeypatch: pytest.MonkeyPatch, root: Path, name: str, packages: Iterable[FakePackage]
) -> Path:
    """A local conda channel at ``root`` holding ``packages``, standing in for channel ``name``."""
    channel = make_channel(root, packages)
    monkeypatch.setenv("SRCBUILD_CHANNEL_MIRRORS", f"{name}={channel_url(channel)}")
    return channel


def install_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], Path]:
    """Run ``srcbuild toolchain install ARGS --json``; the entry it printed, and its prefix, which
    must lie in the configured toolchain directory."""
    assert main(["toolchain", "install", *args, "--json"]) == 0
    [made] = json.loads(capsys.readouterr().out)
    prefix = Path(made["prefix"])
    assert prefix.parent == Paths.resolve(environ=os.environ).toolchain_dir
    return made, prefix
