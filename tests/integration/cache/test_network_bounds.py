"""Every network wait of ``cache pull`` is bounded: redirects stay on the remote's server, a
trickling server is cut at its deadline, and a page with many links cannot make a pull send a
request per link. Servers listen on 127.0.0.1; limits are lowered through the SRCBUILD_NET_*
settings so each case ends in seconds."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from srcbuild.cli import main
from tests.integration.cache.test_hostile_index import index, publish  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration


@pytest.fixture()
def other_server() -> Iterator[tuple[int, list[str]]]:
    """A second server (another port) that records every request it gets."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def redirect(to: str):  # type: ignore[no-untyped-def]
    def handler(h: BaseHTTPRequestHandler) -> None:
        h.send_response(302)
        h.send_header("Location", to)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return handler


def pull(url: str, cache: Path) -> int:
    return main(["cache", "pull", "--trust-unsigned", "--remote", url, "--cache-dir", str(cache)])


def test_a_redirect_to_another_port_is_not_followed(index, other_server, tmp_path: Path, capsys) -> None:  # noqa: F811
    url, routes = index
    port, seen = other_server
    publish(tmp_path, routes)
    routes["/simple/"] = redirect(f"http://127.0.0.1:{port}/simple/")
    assert pull(url, tmp_path / "c") == 7
    err = capsys.readouterr().err
    assert f"the server redirects to http://127.0.0.1:{port}/simple/, off the remote's server; not followed" in err
    assert seen == []


def test_a_redirect_to_another_scheme_connects_nowhere(index, tmp_path: Path, capsys) -> None:  # noqa: F811
    url, routes = index
    publish(tmp_path, routes)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        for target in (f"ftp://127.0.0.1:{port}/simple/", f"file://{tmp_path}/"):
            routes["/simple/"] = redirect(target)
            assert pull(url, tmp_path / "c") == 7
            assert "off the remote's server; not followed" in capsys.readouterr().err
        with pytest.raises(socket.timeout):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()


def test_a_redirect_on_the_same_server_is_followed(index, tmp_path: Path, capsys) -> None:  # noqa: F811
    url, routes = index
    publish(tmp_path, routes)
    routes["/moved/"] = routes["/simple/"]
    routes["/simple/"] = redirect(f"{url}moved/")
    routes["/moved/torch/"] = routes["/simple/torch/"]
    assert pull(url, tmp_path / "c") == 0
    assert "1 fetched" in capsys.readouterr().out


def trickle(body: bytes, every: float, headers_too: bool = False):  # type: ignore[no-untyped-def]
    """A reply that sends one byte every ``every`` seconds (its headers too, when asked)."""

    def handler(h: BaseHTTPRequestHandler) -> None:
        head = f"HTTP/1.0 200 OK\r\nContent-Length: {len(body)}\r\n".encode() + b"X-Slow: " + b"a" * 4000 + b"\r\n\r\n"
        try:
            if headers_too:
                for i in range(len(head)):
                    h.wfile.write(head[i : i + 1])
                    h.wfile.flush()
                    time.sleep(every)
            else:
                h.wfile.write(head)
            for i in range(len(body)):
                h.wfile.write(body[i : i + 1])
                h.wfile.flush()
                time.sleep(every)
        except OSError:
            pass
        h.close_connection = True

    return handler


@pytest.mark.parametrize("where", ["page", "headers", "manifest", "wheel"])
def test_a_trickle_is_cut_at_the_deadline(
    index,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    url, routes = index
    manifest = publish(tmp_path, routes)
    monkeypatch.setenv("SRCBUILD_NET_DEADLINE", "2")
    monkeypatch.setenv("SRCBUILD_NET_TIMEOUT", "5")
    name = manifest["wheel"]
    key = {"page": "/simple/", "headers": "/simple/", "manifest": f"/files/{name}.manifest.json"}.get(
        where, f"/files/{name}"
    )
    body = routes[key]
    assert isinstance(body, bytes)
    routes[key] = trickle(body, 0.3 if where == "page" else 0.05, headers_too=where == "headers")
    started = time.monotonic()
    code = pull(url, tmp_path / "c")
    took = time.monotonic() - started
    out = capsys.readouterr()
    words = " ".join((out.out + out.err).split())
    assert "did not arrive within" in words, words
    # the wheel's deadline adds its size at the slowest rate allowed (16 KiB per 30 s)
    limit = 2 + (len(body) / (16 * 1024 / 30) if where == "wheel" else 0) + 2
    assert took < limit, took
    assert code == {"page": 4, "headers": 4, "manifest": 7, "wheel": 7}[where], words


def test_many_links_do_not_make_many_requests(
    index,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, routes = index
    manifest = publish(tmp_path, routes)
    count = {"n": 0}
    links = "".join(
        f'<a href="../../files/x{i}.whl" data-srcbuild-fingerprint="{manifest["fingerprint"]}">x</a>'
        for i in range(100_000)
    ).encode()

    def page(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(links)))
        h.end_headers()
        h.wfile.write(links)

    routes["/simple/torch/"] = page
    real_get = ThreadingHTTPServer.process_request

    def counting(self, request, client_address):  # type: ignore[no-untyped-def]
        count["n"] += 1
        return real_get(self, request, client_address)

    monkeypatch.setattr(ThreadingHTTPServer, "process_request", counting)
    monkeypatch.setenv("SRCBUILD_NET_MAX_REQUESTS", "200")
    assert pull(url, tmp_path / "c") == 4
    assert "more than 200 requests in one command; stopped" in " ".join(capsys.readouterr().err.split())
    assert count["n"] <= 200
