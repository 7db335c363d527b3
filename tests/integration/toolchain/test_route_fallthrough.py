"""A build's planned toolchain route that fails at run time gives way to the next route, in the
documented order, with one line: two servers on 127.0.0.1, one that answered when the build was
planned and refuses when it runs (NVIDIA's redist archives), one serving (the runfile, through the
NVIDIA mirror); the prefix another route made sends the build back to planning (``Rerouted``)."""

from __future__ import annotations

import io
import os
import socket
from pathlib import Path

import pytest

from srcbuild.paths import Paths
from srcbuild.toolchain.data_files import load_facts
from srcbuild.toolchain.planned import PlannedProvision, Rerouted, rerouted, run_planned
from srcbuild.toolchain.providers.base import Request
from srcbuild.toolchain.provision import routes
from srcbuild.toolchain.reach import Reach
from srcbuild.toolchain.session import open_session
from srcbuild.toolchain.store import toolchain_key
from tests.worlds.nvidia_site import NV, Site, SiteServer

pytestmark = pytest.mark.integration


def _redist_elsewhere(site: Site, data: Path, port: int) -> None:
    """The site's data with the redist archives on 127.0.0.1:``port`` (not NVIDIA's host, so the
    mirror does not replace it), the runfile still on NVIDIA's (so the mirror serves it)."""
    data.mkdir()
    for table in site.data_dir.iterdir():
        text = table.read_text()
        if table.name == "cuda_redist.toml":
            text = text.replace(f'base = "{NV}', f'base = "http://127.0.0.1:{port}/')
        (data / table.name).write_text(text)


def test_a_route_refused_at_run_time_gives_way_to_the_next_and_the_build_is_planned_again(
    nvidia_site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planning = socket.socket()  # the redist host: it answers while the build is planned ...
    planning.bind(("127.0.0.1", 0))
    planning.listen()
    port = planning.getsockname()[1]
    _redist_elsewhere(nvidia_site, tmp_path / "data", port)
    with SiteServer(nvidia_site.root) as mirror:
        environ = {**os.environ, "SRCBUILD_TOOLCHAIN_DATA": str(tmp_path / "data"),
                   "SRCBUILD_NVIDIA_MIRROR": mirror.url, "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "toolchains")}
        monkeypatch.setattr("srcbuild.toolchain.reach._MEMO", {})  # this test's own probes
        facts = load_facts(environ)
        request = Request("cuda", "11.8")
        offers, passed = routes(request, facts, reach=Reach(facts, environ, mirror.url))
        assert [o.provider for o in offers][:2] == ["redist", "runfile"] and passed == []
        offer = offers[0]
        paths = Paths.resolve(environ=environ)
        planned = paths.toolchain_dir / toolchain_key(offer.name, offer.version, offer.provider)
        step = PlannedProvision(offer, planned)
        planning.close()  # ... and refuses when it runs
        out = io.StringIO()
        outcomes = run_planned((step,), open_session(paths, stream=out, environ=environ))
    (outcome,) = outcomes
    assert outcome.toolchain.provider == "runfile"
    assert outcome.toolchain.prefix == paths.toolchain_dir / "cuda-11.8-runfile"
    assert (outcome.toolchain.prefix / "bin" / "nvcc").is_file()
    lines = [line for line in out.getvalue().splitlines() if line.startswith("route ")]
    nvcc = "compute/cuda/redist/cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-11.8.89-archive.tar.xz"
    assert lines == [
        f"route redist failed: download failed: http://127.0.0.1:{port}/{nvcc}: [Errno 111] Connection refused "
        "(the mirror in SRCBUILD_NVIDIA_MIRROR); using route runfile"
    ]
    assert not (paths.toolchain_dir / "cuda-11.8-redist").exists()  # nothing half-made is left
    moved = rerouted((step,), outcomes)
    assert isinstance(moved, Rerouted) and moved.message == (
        f"provisioned CUDA 11.8 by route runfile into {outcome.toolchain.prefix}, not route redist: the build was "
        "planned with the planned route's prefix"
    )
    # planned again, the build finds that prefix provisioned: nothing to fetch, nothing rerouted
    assert rerouted((PlannedProvision(offer, outcome.toolchain.prefix),), outcomes) is None
