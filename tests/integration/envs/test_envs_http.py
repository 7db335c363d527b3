"""Channels served over HTTP on 127.0.0.1: solving, downloading, and refusing a swapped file."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from worlds.conda_channel import FakePackage, write_package

from srcbuild.cli import main
from srcbuild.envs import read_lockfile
from srcbuild.paths import Paths

pytestmark = pytest.mark.integration


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_root(channels: dict[str, Path]) -> Iterator[str]:
    """The channels directory served on a free port of 127.0.0.1."""
    root = next(iter(channels.values())).parent
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_mirror_lock_and_install(
    write_recipe: Callable[..., Path],
    http_root: str,
    channels: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    recipe = write_recipe()
    mirrors = ["--channel-alias", http_root]  # every named channel at <alias>/<name>
    assert main(["lock", "--recipe", str(recipe), *mirrors]) == 0
    lock = read_lockfile(recipe.with_name("demo-cu92.conda-lock.yml"))
    assert not any(http_root in p.url for p in lock.packages)  # the lockfile keeps canonical URLs
    capsys.readouterr()

    assert main(["env", "create", "--recipe", str(recipe), *mirrors]) == 0
    prefix = Path(capsys.readouterr().out.strip().splitlines()[-1])
    downloads = Paths.resolve(environ=os.environ).envs_dir / ".downloads"
    cmake = next(p for p in lock.packages if p.name == "cmake")
    assert (downloads / cmake.sha256 / cmake.file_name).is_file()  # fetched once, verified, kept
    assert (prefix / "bin" / "cmake").is_file()

    # the server now serves another file under the same name: the next fresh install refuses it
    assert main(["env", "rm", "--all"]) == 0
    evil = write_package(
        FakePackage("cmake", "3.27.9", files={"bin/cmake": b"#!/bin/sh\necho pwned\n"}), channels["conda-forge"]
    )
    actual = hashlib.sha256(evil.read_bytes()).hexdigest()
    capsys.readouterr()
    assert main(["env", "create", "--recipe", str(recipe), *mirrors]) == 8
    err = capsys.readouterr().err.splitlines()
    assert f"  downloading cmake-3.27.9-h0_0.tar.bz2 from {http_root}/conda-forge" in err
    assert (
        f"error: package cmake 3.27.9 (cmake-3.27.9-h0_0.tar.bz2) has sha256 {actual}, "
        f"but the lockfile demo-cu92.conda-lock.yml records {cmake.sha256}"
    ) in err
    assert not (downloads / cmake.sha256 / cmake.file_name).exists()  # the bad download is not kept


def test_http_channel_solve(
    write_recipe: Callable[..., Path], http_root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = write_recipe(conda=("hello",))
    args = [
        "--channel-mirror",
        f"conda-forge={http_root}/conda-forge",
        "--channel-mirror",
        f"pytorch={http_root}/pytorch",
    ]
    assert main(["env", "create", "--recipe", str(recipe), *args]) == 0
    prefix = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert (prefix / "conda-meta" / "libgreet-1.0-h0_0.json").is_file()
