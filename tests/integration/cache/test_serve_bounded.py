"""``cache serve`` under clients that stall: a fixed thread count, answers for everyone else, and one
line per dropped client (real server process or real server object, real sockets on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from srcbuild.cache.serve_pool import BoundedHTTPServer
from srcbuild.cache.simple_index import _QuietHandler
from srcbuild.cache.store import WheelCache
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration

STALLED = 1000


def _get(port: int, path: str = "/simple/", timeout: float = 10.0) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        reply = b""
        while True:  # the whole answer: a client that hangs up early is a dropped client too
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1])


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]


def test_a_thousand_stalled_clients_hold_no_threads(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 3 * STALLED:
        pytest.skip(f"needs {3 * STALLED} open files (the hard limit here is {hard})")
    if soft != resource.RLIM_INFINITY and soft < 3 * STALLED:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (4 * STALLED if hard == resource.RLIM_INFINITY else min(hard, 4 * STALLED), hard)
        )
    cache = tmp_path / "cache"
    wheel = make_wheel(tmp_path / "dist")
    WheelCache(cache).store(wheel, make_manifest(wheel))
    proc = subprocess.Popen(
        [sys.executable, "-m", "srcbuild", "cache", "serve", "--port", "0", "--unsigned", "--cache-dir", str(cache)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stalled: list[socket.socket] = []
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        port = int(first.rsplit(":", 1)[1].split("/", 1)[0])
        assert _get(port) == 200
        idle_threads = _threads(proc.pid)
        for _ in range(STALLED):  # half a request each, then silence
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /simple/ HTTP/1.1\r\nHost: x\r\n")
            stalled.append(sock)
        time.sleep(1.0)
        assert _threads(proc.pid) == idle_threads  # no thread per connection
        for _ in range(20):  # everyone else is still answered, quickly
            started = time.monotonic()
            assert _get(port, timeout=5) == 200
            assert time.monotonic() - started < 5
        assert _threads(proc.pid) == idle_threads
        assert idle_threads <= 12
    finally:
        for sock in stalled:
            sock.close()
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
    lines = err.splitlines()
    dropped = [line for line in lines if line.startswith("cache serve: dropped 127.0.0.1:")]
    # the 512 newest stalled clients wait and every older one is dropped; the first answered client
    # drops one more to make room, and each answered client leaves its place to the next
    assert len(dropped) == STALLED - 512 + 1, err[-2000:]
    assert all(line.endswith("connections were waiting for their requests; the oldest goes") for line in dropped)
    assert "Traceback" not in err


@pytest.fixture()
def small_server(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "index"
    (root / "files").mkdir(parents=True)
    (root / "files" / "big.whl").write_bytes(os.urandom(64 << 20))
    (root / "simple").mkdir()
    (root / "simple" / "index.html").write_text("<a href='x'>x</a>")
    lines: list[str] = []
    server = BoundedHTTPServer(
        ("127.0.0.1", 0),
        partial(_QuietHandler, directory=str(root)),
        workers=2,
        max_waiting=4,
        queue_size=2,
        request_timeout=1.0,
        io_timeout=1.0,
        log=lines.append,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, lines
    finally:
        server.shutdown()
        server.server_close()


def test_a_client_that_sends_half_a_request_is_dropped_after_the_timeout(small_server) -> None:  # type: ignore[no-untyped-def]
    server, lines = small_server
    port = server.server_address[1]
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /simple/ HTT")
    deadline = time.monotonic() + 10
    while not lines and time.monotonic() < deadline:
        time.sleep(0.05)
    here = sock.getsockname()
    assert lines == [f"cache serve: dropped {here[0]}:{here[1]}: no complete request within 1 s"]
    assert sock.recv(10) == b""  # the server closed it
    sock.close()
    assert _get(port) == 200


def test_a_client_that_stops_reading_frees_its_worker(small_server) -> None:  # type: ignore[no-untyped-def]
    server, lines = small_server
    port = server.server_address[1]
    readers = []
    for _ in range(2):  # both workers busy sending 64 MiB nobody reads
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(b"GET /files/big.whl HTTP/1.0\r\n\r\n")
        readers.append(sock)
    deadline = time.monotonic() + 15
    while len([x for x in lines if "stopped reading" in x]) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sorted(line.split(": ", 2)[2] for line in lines) == ["stopped reading its answer for 1 s"] * 2, lines
    assert _get(port) == 200  # the workers are free again
    for sock in readers:
        sock.close()


def test_oversized_headers_are_dropped(small_server) -> None:  # type: ignore[no-untyped-def]
    server, lines = small_server
    port = server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with contextlib.suppress(OSError):  # the server may close while we still send
            sock.sendall(b"GET / HTTP/1.0\r\nX: " + b"a" * (80 << 10))
        deadline = time.monotonic() + 5
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(lines) == 1 and lines[0].endswith(": request headers larger than 64 KiB")
