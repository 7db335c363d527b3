"""A route whose host cannot be reached gives way to the next: real sockets on 127.0.0.1 (one
listening, one closed port) and the machine's own apt configuration for the Debian route."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from srcbuild.toolchain.data_files import load_facts
from srcbuild.toolchain.needs import fetch_line, needs_for
from srcbuild.toolchain.providers.apt import configured_mirror
from srcbuild.toolchain.providers.base import Request
from srcbuild.toolchain.provision import routes
from srcbuild.toolchain.reach import Reach, probe

pytestmark = pytest.mark.integration


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield port


def test_probe_answers_for_a_host_a_closed_port_and_a_directory(tmp_path: Path, closed_port: int) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert probe(f"http://127.0.0.1:{server.getsockname()[1]}/x", {}) is None
    why = probe(f"http://127.0.0.1:{closed_port}/compute/cuda/redist/x.tar.xz", {})
    assert why == f"127.0.0.1:{closed_port}: Connection refused"
    assert probe(str(tmp_path), {}) is None
    assert probe(str(tmp_path / "nothing"), {}) == f"{tmp_path / 'nothing'} does not exist"


def test_an_unreachable_nvidia_host_gives_way_to_the_debian_route(closed_port: int) -> None:
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None or configured_mirror() is None:
        if os.environ.get("SRCBUILD_REQUIRE_TOOLS") == "1":
            pytest.fail("apt-get, dpkg-deb and a configured Debian mirror are needed for the debian route")
        pytest.skip("no Debian route on this machine (apt-get, dpkg-deb, an apt mirror)")
    facts = load_facts({})
    reach = Reach(facts, {}, mirror=f"http://127.0.0.1:{closed_port}")
    offers, passed = routes(Request("cuda", "11.8"), facts, reach=reach)
    assert [o.provider for o in offers][:1] == ["debian"] and "redist" in [o.provider for o in offers]
    assert passed[0].line("debian") == (
        f"route redist (127.0.0.1:{closed_port}) cannot be reached: 127.0.0.1:{closed_port}: Connection refused; "
        "using route debian"
    )
    # the same mirror answering: the documented order stands (redist first), with one probe
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        answering = Reach(facts, {}, mirror=f"http://127.0.0.1:{server.getsockname()[1]}")
        offers, passed = routes(Request("cuda", "11.8"), facts, reach=answering)
    assert offers[0].provider == "redist" and passed == []


def test_doctor_names_the_route_really_used(tmp_path: Path, closed_port: int) -> None:
    from srcbuild.host.facts import HostFacts
    from srcbuild.paths import Paths
    from srcbuild.recipe import RecipeCatalog
    from srcbuild.toolchain.store import ToolchainStore

    if shutil.which("apt-get") is None or configured_mirror() is None:
        pytest.skip("no Debian route on this machine")
    facts = load_facts({})
    recipe = RecipeCatalog(Paths.resolve(tmp_path / "work", tmp_path / "cache", environ={})).load("kepler-k80-cu118")
    reach = Reach(facts, {}, mirror=f"http://127.0.0.1:{closed_port}")
    store = ToolchainStore(tmp_path / "toolchains")
    needs = needs_for(recipe, HostFacts(), store, facts, reach=reach)
    line = fetch_line(needs) or ""
    assert line.startswith("srcbuild will fetch: CUDA 11.8 (debian")
    assert f"(route redist (127.0.0.1:{closed_port}) cannot be reached: " in line
