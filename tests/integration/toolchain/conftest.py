"""The NVIDIA stand-in site, built once per session from the real CUDA 11.8 home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
