"""A smart-HTTP git server on 127.0.0.1 with a bandwidth cap and a per-request delay: a network-like link.

``serve(root, bandwidth=10e6, latency=0.05)`` serves every repository under ``root`` through
``git http-backend`` (the CGI program git ships) from a thread, and returns the server and its base
URL. All connections share one token bucket, as parallel downloads share one link. Used by
``bench_source_sync.py`` to time clones the way users meet them: over a network, where the bytes
transferred cost time.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class Link:
    """A shared bandwidth budget: ``take(n)`` returns once ``n`` bytes fit through the link."""

    def __init__(self, bandwidth: float) -> None:
        self.bandwidth = bandwidth
        self.lock = threading.Lock()
        self.free_at = time.monotonic()
        self.bytes = 0

    def take(self, n: int) -> None:
        with self.lock:
            start = max(time.monotonic(), self.free_at)
            self.free_at = start + n / self.bandwidth
            self.bytes += n
            done = self.free_at
        delay = done - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def make_handler(root: Path, link: Link, latency: float) -> type[BaseHTTPRequestHandler]:
    class GitHandler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def do_GET(self) -> None:
            self._cgi()

        def do_POST(self) -> None:
            self._cgi()

        def _cgi(self) -> None:
            time.sleep(latency)
            path, _, query = self.path.partition("?")
            body = _read_body(self)
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": os.devnull,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_ADDR": self.client_address[0],
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            proc = subprocess.Popen(["git", "http-backend"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            assert proc.stdin is not None and proc.stdout is not None
            feeder = threading.Thread(target=lambda: (proc.stdin.write(body), proc.stdin.close()))  # type: ignore[union-attr]
            feeder.start()
            status, headers = 200, []
            while True:
                line = proc.stdout.readline().rstrip(b"\r\n")
                if not line:
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                else:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            while True:
                chunk = proc.stdout.read1(65536)  # type: ignore[attr-defined]
                if not chunk:
                    break
                link.take(len(chunk))
                self.wfile.write(chunk)
            proc.wait()
            feeder.join()

    return GitHandler


def serve(root: Path, bandwidth: float = 10e6, latency: float = 0.05) -> tuple[ThreadingHTTPServer, str, Link]:
    """Start serving ``root``; returns the server (call ``shutdown()``), its base URL and the link."""
    link = Link(bandwidth)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(root, link, latency))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/", link
