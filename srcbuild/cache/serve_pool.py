"""The HTTP server of ``cache serve``: a bounded number of threads whatever the clients do.

``http.server.ThreadingHTTPServer`` starts a thread per connection and waits on each forever: a
thousand clients that send half a request hold a thousand threads. Here a connection costs a
thread only once its request has arrived:

* the listening thread accepts and hands each connection to one **reader** thread, which waits on
  all of them at once (``selectors``) until each has sent its request line and headers (more than
  ``max_waiting`` accepted connections not yet taken by the reader are dropped at once);
* a complete request goes to one of ``workers`` threads (a fixed pool, its queue bounded);
* a client that sends no complete request within ``request_timeout`` seconds, sends more than
  ``MAX_HEADER_BYTES`` of headers, finds ``max_waiting`` connections already waiting (the oldest
  waiting one is dropped to make room: a stalled client cannot lock out a new one) or the
  workers' queue full, is dropped with one line on stderr naming it and why;
* a worker's socket has a timeout of ``io_timeout`` seconds on every read and write, so a client
  that stops reading its answer frees the worker.

Threads: 1 listening, 1 reader, ``workers`` workers: 11 by default, for any number of clients.
Only GET and HEAD are served (the index is files), so a request is complete at its blank line.
"""

from __future__ import annotations

import contextlib
import io
import queue
import selectors
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from http.server import HTTPServer
from socketserver import BaseRequestHandler
from typing import Any

MAX_HEADER_BYTES = 64 * 1024
WORKERS = 8
MAX_WAITING = 512  # connections still sending their request
QUEUE = 64  # complete requests waiting for a worker
REQUEST_TIMEOUT = 30.0  # seconds to send the request line and headers
IO_TIMEOUT = 30.0  # seconds any one read or write of an answer may take

_Job = tuple[socket.socket, Any, bytes]


def _stderr_line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class BoundedHTTPServer(HTTPServer):
    """An ``HTTPServer`` whose connections wait in one reader thread and run on a fixed pool."""

    request_queue_size = 128  # listen() backlog: socketserver's 5 makes a burst of clients retry SYNs

    def __init__(
        self,
        address: tuple[str, int],
        handler: Callable[..., BaseRequestHandler],
        *,
        workers: int = WORKERS,
        max_waiting: int = MAX_WAITING,
        queue_size: int = QUEUE,
        request_timeout: float = REQUEST_TIMEOUT,
        io_timeout: float = IO_TIMEOUT,
        log: Callable[[str], None] = _stderr_line,
    ) -> None:
        super().__init__(address, handler)
        self.max_waiting = max_waiting
        self.request_timeout = request_timeout
        self.io_timeout = io_timeout
        self.log = log
        self.dropped = 0
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=queue_size)
        self._incoming: queue.SimpleQueue[tuple[socket.socket, Any]] = queue.SimpleQueue()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._waiting: OrderedDict[socket.socket, tuple[Any, float, bytearray]] = OrderedDict()
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._read_loop, name="serve-reader", daemon=True)]
        self._threads += [
            threading.Thread(target=self._work_loop, name=f"serve-worker-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    # -- the listening thread ------------------------------------------------------------------
    def process_request(self, request: Any, client_address: Any) -> None:
        """Hand an accepted connection to the reader thread (never blocks; a flood the reader has not
        taken yet is dropped here, so accepted sockets stay bounded too)."""
        if self._incoming.qsize() >= self.max_waiting:
            self._close(request)
            self.note_dropped(client_address, f"{self.max_waiting} connections arrived faster than they were read")
            return
        self._incoming.put((request, client_address))
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never a traceback: what failed with which client."""
        exc = sys.exc_info()[1]
        self.note_dropped(client_address, f"{type(exc).__name__}: {exc}" if exc else "error")

    def server_close(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")
        for _ in self._threads[1:]:
            try:
                self._jobs.put(None, timeout=1)
            except queue.Full:
                break
        self._threads[0].join(timeout=5)
        super().server_close()

    # -- the reader thread ---------------------------------------------------------------------
    def _read_loop(self) -> None:
        while not self._stopping.is_set():
            for key, _events in self._selector.select(timeout=0.5):
                if key.fileobj is self._wake_r:
                    self._take_incoming()
                else:
                    self._read(key.fileobj)  # type: ignore[arg-type]
            self._expire()
        for sock in list(self._waiting):
            self._forget(sock)
            self._close(sock)

    def _take_incoming(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return
        while True:
            try:
                sock, address = self._incoming.get_nowait()
            except queue.Empty:
                return
            while len(self._waiting) >= self.max_waiting:
                oldest = next(iter(self._waiting))
                why = f"{self.max_waiting} connections were waiting for their requests; the oldest goes"
                self._drop(oldest, self._waiting[oldest][0], why)
            sock.setblocking(False)
            self._waiting[sock] = (address, time.monotonic() + self.request_timeout, bytearray())
            self._selector.register(sock, selectors.EVENT_READ, None)

    def _read(self, sock: socket.socket) -> None:
        address, _deadline, data = self._waiting[sock]
        try:
            chunk = sock.recv(16384)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._drop(sock, address, f"read failed ({exc.strerror or exc})")
            return
        if not chunk:  # the client closed before sending a request: nothing to answer
            self._forget(sock)
            self._close(sock)
            return
        data += chunk
        if b"\r\n\r\n" in data or b"\n\n" in data:
            self._forget(sock)
            try:
                self._jobs.put_nowait((sock, address, bytes(data)))
            except queue.Full:
                workers = len(self._threads) - 1
                self._drop(sock, address, f"all {workers} workers busy and {self._jobs.maxsize} requests queued")
            return
        if len(data) > MAX_HEADER_BYTES:
            self._drop(sock, address, f"request headers larger than {MAX_HEADER_BYTES // 1024} KiB")

    def _expire(self) -> None:
        now = time.monotonic()
        for sock, (address, deadline, _data) in list(self._waiting.items()):
            if deadline > now:
                break  # in arrival order: the rest are younger
            self._drop(sock, address, f"no complete request within {self.request_timeout:g} s")

    def _forget(self, sock: socket.socket) -> None:
        self._waiting.pop(sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(sock)

    def _drop(self, sock: socket.socket, address: Any, why: str) -> None:
        self._forget(sock)
        self._close(sock)
        self.note_dropped(address, why)

    def note_dropped(self, address: Any, why: str) -> None:
        """One line on the log for a client the server gave up on."""
        self.dropped += 1
        who = f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else "a client"
        self.log(f"cache serve: dropped {who}: {why}")

    @staticmethod
    def _close(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.close()

    # -- the workers ---------------------------------------------------------------------------
    def _work_loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            sock, address, head = job
            try:
                sock.setblocking(True)
                sock.settimeout(self.io_timeout)
                self.RequestHandlerClass(_PreRead(sock, head), address, self)  # type: ignore[arg-type]
            except TimeoutError:
                self.note_dropped(address, f"stopped reading its answer for {self.io_timeout:g} s")
            except OSError as exc:
                self.note_dropped(address, f"connection lost ({exc.strerror or type(exc).__name__})")
            except Exception as exc:  # a handler bug must not end the worker
                self.note_dropped(address, f"{type(exc).__name__}: {exc}")
            finally:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)
                self._close(sock)


class _PreRead:
    """A connection whose request the reader thread already read: ``makefile('rb')`` returns those
    bytes, everything else is the socket's (the handler writes its answer to it)."""

    def __init__(self, sock: socket.socket, head: bytes) -> None:
        self._sock = sock
        self._head = head

    def makefile(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "r" in mode:
            return io.BytesIO(self._head)
        return self._sock.makefile(mode, *args, **kwargs)  # type: ignore[call-overload]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)
