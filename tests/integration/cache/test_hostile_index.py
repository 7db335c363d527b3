"""A hostile HTTP index on 127.0.0.1: paths in manifests, links off the server, endless and broken pages."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.files import sha256_file
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration

Route = bytes | Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture()
def index() -> Iterator[tuple[str, dict[str, Route]]]:
    """A server on 127.0.0.1 answering from a dict of path -> body (or handler)."""
    routes: dict[str, Route] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = routes.get(self.path)
            if route is None:
                self.send_error(404)
                return
            if callable(route):
                route(self)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(route)))
            self.end_headers()
            self.wfile.write(route)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", routes
    finally:
        server.shutdown()
        server.server_close()


def publish(tmp_path: Path, routes: dict[str, Route], **changes: object) -> dict:
    """Serve one entry as `cache index` would, with ``changes`` applied to its manifest."""
    wheel = make_wheel(tmp_path / "dist")
    manifest = make_manifest(wheel).to_json()
    manifest.update(changes)
    name = wheel.name
    routes["/simple/"] = b'<a href="torch/">torch</a>'
    routes["/simple/torch/"] = (
        f'<a href="../../files/{name}#sha256={manifest["sha256"]}" '
        f'data-srcbuild-fingerprint="{manifest["fingerprint"]}">{name}</a>'
    ).encode()
    routes[f"/files/{name}"] = wheel.read_bytes()
    routes[f"/files/{name}.manifest.json"] = json.dumps(manifest).encode()
    return manifest


@pytest.mark.parametrize("hostile", ["/tmp/srcbuild-victim.sh", "../../../../.bashrc"])
def test_a_manifest_naming_a_path_is_never_fetched(
    index, tmp_path: Path, hostile: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url, routes = index
    publish(tmp_path, routes, wheel=hostile)
    routes["/files/" + hostile.lstrip("/")] = b"#!/bin/sh\necho owned\n"
    cache = tmp_path / "cache"
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(cache)]) == 7
    captured = capsys.readouterr()
    assert captured.out == "1 unusable\n"
    assert " ".join(captured.err.split()).startswith(f"warning: {url}: entry {url}files/")
    assert "is not a plain file name" in " ".join(captured.err.split())
    assert not Path("/tmp/srcbuild-victim.sh").exists()
    assert sorted(p.name for p in cache.rglob("*")) == ["CACHEDIR.TAG"]


def test_a_link_off_the_server_is_not_followed(index, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, routes = index
    manifest = publish(tmp_path, routes)
    secret = tmp_path / "secret.whl"
    secret.write_bytes(b"local secret")
    routes["/simple/torch/"] = (
        f'<a href="file://{secret}" data-srcbuild-fingerprint="{manifest["fingerprint"]}">x</a>'
    ).encode()
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 7
    captured = capsys.readouterr()
    assert captured.out == "1 unusable\n"
    assert "points off the index server" in " ".join(captured.err.split())


def test_a_wheel_longer_than_its_manifest_is_cut(index, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, routes = index
    manifest = publish(tmp_path, routes)
    name = manifest["wheel"]
    routes[f"/files/{name}"] = bytes(routes[f"/files/{name}"]) + b"\0" * (1 << 20)  # type: ignore[arg-type]
    cache = tmp_path / "c"
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(cache)]) == 7
    out = " ".join(capsys.readouterr().out.split())  # the words, whatever the wrapping
    assert f"is larger than the {manifest['size']} bytes its manifest states" in out
    assert list(WheelCache(cache).entries()) == [] and list((cache / "tmp").iterdir()) == []


def endless(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.end_headers()
    chunk = b"<a href='x'>" * 8192
    try:
        while True:
            handler.wfile.write(chunk)
    except OSError:
        pass


def test_an_endless_reply_is_bounded(index, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import resource

    url, routes = index
    manifest = publish(tmp_path, routes)
    routes[f"/files/{manifest['wheel']}.manifest.json"] = endless
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 7
    captured = capsys.readouterr()
    assert captured.out == "1 unusable\n"  # the endless manifest was cut, skipped and named
    assert "is larger than 4194304 bytes; not read" in " ".join(captured.err.split())
    routes["/simple/"] = endless
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 4
    assert "is larger than 16777216 bytes; not read" in capsys.readouterr().err
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200 * 1024  # far below the reply's size: nothing is read past the limits


def test_broken_pages_are_clean_errors(index, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, routes = index
    publish(tmp_path, routes)
    routes["/simple/"] = b"<a href='torch/'>\xff\xfe\xfd</a>"
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 7
    assert capsys.readouterr().err.startswith(f"error: {url}simple/: the page is not UTF-8 text\n")
    routes["/simple/"] = b"<a href='torch/'>torch</a>"
    routes["/simple/torch/"] = b"\xff" * 100  # a broken project page is skipped, and named
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 7
    assert "the page is not UTF-8 text" in capsys.readouterr().err
    del routes["/simple/"]
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.endswith(
        "hint: point --remote at the root that `srcbuild cache index` wrote\n"
    )


def test_the_link_and_manifest_must_agree(index, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, routes = index
    manifest = publish(tmp_path, routes)
    evil = make_wheel(tmp_path / "evil", payload=b"evil\n")
    routes[f"/files/{manifest['wheel']}"] = evil.read_bytes()
    assert sha256_file(evil) != manifest["sha256"]
    assert main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(tmp_path / "c")]) == 7
    assert "does not match the manifest's" in " ".join(capsys.readouterr().out.split())
