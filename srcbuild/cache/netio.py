"""Every HTTP wait of a cache remote is bounded: in time, in size, in requests, and to one server.

A remote's server may be hostile or broken. ``Session`` is the only way the HTTP remotes
(``remotes.http``, ``remotes.upload``) talk to one:

* **one origin**: a redirect is followed only to the remote's own scheme, host and port (at most
  ``MAX_REDIRECTS`` of them); anything else (another port, ``ftp://``, ``file://``) is refused
  with the URL it pointed to;
* **connect and read deadline**: the socket times out after ``NetLimits.read_timeout`` seconds of
  silence, while connecting and on every read;
* **total deadline**: a body is read in chunks of at most ``CHUNK`` bytes, each as soon as it
  arrives (``read1``), so a server trickling a byte at a time cannot hold a read open: a page,
  manifest, signature or log must be complete within ``NetLimits.deadline`` seconds, a wheel within
  that plus its size at the slowest rate allowed, and any body must deliver at least
  ``NetLimits.speed_limit`` bytes in every ``NetLimits.speed_time`` seconds (curl's low-speed limit);
* **caps per command**: one remote gets at most ``NetLimits.max_requests`` requests and
  ``NetLimits.max_bytes`` bytes (an index page with 100,000 links cannot make a pull send 100,000
  requests).

``NetLimits.resolve`` reads the settings that raise them (docs/security.md lists them):
``SRCBUILD_NET_TIMEOUT``, ``SRCBUILD_NET_DEADLINE``, ``SRCBUILD_NET_MAX_REQUESTS`` and
``SRCBUILD_NET_MAX_BYTES``.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urljoin, urlparse

from srcbuild.cache.netlimits import KiB, NetLimits
from srcbuild.errors import CacheIntegrityError, HostError, disk_full

CHUNK = 64 * KiB
MAX_REDIRECTS = 5
DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port made explicit."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    try:
        port = parsed.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = -1
    return scheme, (parsed.hostname or "").lower(), port


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS

    def __init__(self, session: Session) -> None:
        self.session = session

    def _check(self, req: urllib.request.Request, headers: Any) -> None:
        """Refuse a redirect off the remote's origin before urllib looks at it (it would follow ftp://)."""
        target = headers.get("location") or headers.get("uri") or ""
        newurl = urljoin(req.full_url, target)
        if origin(newurl) != self.session.origin:
            self.session.off_origin = newurl
            raise CacheIntegrityError(
                f"{req.full_url[:200]}: the server redirects to {newurl[:200]}, off the remote's server; not followed",
                f"point --remote at the server that holds the files ({self.session.label})",
            )
        self.session.count_request(newurl)

    def http_error_302(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any) -> Any:
        self._check(req, headers)
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def _watched(base: type[http.client.HTTPConnection], session: Session) -> Any:
    """``base`` whose socket, once connected, the session's watchdog may shut."""

    class Watched(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            session.sockets.append(self.sock)

    return Watched


class _Http(urllib.request.HTTPHandler):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self.session), req)


class _Https(urllib.request.HTTPSHandler):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPSConnection, self.session), req, context=self._context)  # type: ignore[attr-defined]


class Session:
    """One remote's HTTP traffic: one origin, bounded waits, counted requests and bytes."""

    def __init__(self, url: str, limits: NetLimits | None = None) -> None:
        self.label = url
        self.origin = origin(url)
        self.limits = limits or NetLimits()
        self.requests = 0
        self.bytes = 0
        self.sockets: list[socket.socket] = []
        self.expired = False
        self.over_budget = False
        self.off_origin: str | None = None  # where the last refused redirect pointed
        self._opener = urllib.request.build_opener(_SameOrigin(self), _Http(self), _Https(self))

    @contextlib.contextmanager
    def _watchdog(self, seconds: float) -> Iterator[None]:
        """Shut the request's sockets when it runs past ``seconds`` (a server trickling its
        headers byte by byte is stopped too); the reader sees ``expired``."""
        self.expired = False

        def expire() -> None:
            self.expired = True
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def _late(self, what: str, seconds: float) -> HostError:
        return HostError(
            f"{what} did not arrive within {seconds:.0f} s",
            "check the remote and the network; raise SRCBUILD_NET_DEADLINE for a slow link",
        )

    def count_request(self, url: str) -> None:
        self.requests += 1
        if self.requests > self.limits.max_requests:
            self.over_budget = True
            raise HostError(
                f"{self.label}: more than {self.limits.max_requests} requests in one command; stopped "
                f"before {url[:200]}",
                "check the remote (its pages link more than a cache holds); raise SRCBUILD_NET_MAX_REQUESTS "
                "if it is that large",
            )

    def open(self, url: str) -> http.client.HTTPResponse:
        """GET ``url`` (on the remote's server only); urllib's errors pass through to the caller."""
        if origin(url) != self.origin:
            raise CacheIntegrityError(
                f"{self.label}: a link points off the remote's server ({url[:200]}); not followed", "check the remote"
            )
        self.count_request(url)
        self.sockets = []
        self.off_origin = None
        with self._watchdog(self.limits.deadline):
            try:
                response: http.client.HTTPResponse = self._opener.open(url, timeout=self.limits.read_timeout)
            except NETWORK_ERRORS:
                if self.expired:
                    raise self._late(f"the answer of {url[:200]}", self.limits.deadline) from None
                raise
        if self.expired:  # the watchdog cut the headers short: http.client takes EOF as their end
            response.close()
            raise self._late(f"the answer of {url[:200]}", self.limits.deadline)
        return response

    def _count_bytes(self, n: int, what: str) -> None:
        self.bytes += n
        if self.bytes > self.limits.max_bytes:
            self.over_budget = True
            raise HostError(
                f"{self.label}: more than {self.limits.max_bytes} bytes in one command; stopped while reading {what}",
                "check the remote; raise SRCBUILD_NET_MAX_BYTES if this much is expected",
            )

    def read(self, response: Any, limit: int, what: str, out: BinaryIO | None = None) -> bytes:
        """The body of ``response`` (or, with ``out``, copied there and b"" returned), bounded by
        ``limit`` bytes and the deadlines; HostError past a deadline, CacheIntegrityError past ``limit``."""
        started = window = time.monotonic()
        deadline = self.limits.deadline + (limit / self.limits.min_rate if out is not None else 0)
        in_window = 0
        total = 0
        chunks: list[bytes] = []
        reader = getattr(response, "read1", None) or response.read
        with self._watchdog(deadline + 1):
            while True:
                try:
                    chunk = reader(min(CHUNK, limit + 1 - total))
                except NETWORK_ERRORS:
                    if self.expired:
                        raise self._late(what, deadline) from None
                    raise
                if self.expired:
                    raise self._late(what, deadline)
                if not chunk:
                    return b"".join(chunks)
                total += len(chunk)
                in_window += len(chunk)
                self._step(chunk, total, limit, what, out, chunks)
                now = time.monotonic()
                if now - started > deadline:
                    raise self._late(f"{what} ({total} bytes came)", deadline)
                if now - window >= self.limits.speed_time:
                    if in_window < self.limits.speed_limit:
                        raise HostError(
                            f"{what} arrives slower than {self.limits.speed_limit} bytes in "
                            f"{self.limits.speed_time:.0f} s; stopped",
                            "check the remote and the network",
                        )
                    window, in_window = now, 0

    def _step(self, chunk: bytes, total: int, limit: int, what: str, out: BinaryIO | None, chunks: list[bytes]) -> None:
        """Count one chunk, refuse it past ``limit``, keep it."""
        self._count_bytes(len(chunk), what)
        if total > limit:
            if out is not None:
                raise CacheIntegrityError(
                    f"{what} is larger than the {limit} bytes its manifest states; the download was stopped",
                    "the remote copy is damaged or hostile; it was not stored",
                )
            raise HostError(
                f"{what} is larger than {limit} bytes; not read", "check the remote: it is not a srcbuild cache"
            )
        if out is None:
            chunks.append(chunk)
            return
        try:
            out.write(chunk)
        except OSError as exc:  # this machine's disk, not the remote
            full = disk_full(exc, Path(getattr(out, "name", ".")))
            raise full or HostError(f"writing {what} failed ({exc.strerror})", "check the cache directory") from None


NETWORK_ERRORS = (urllib.error.URLError, OSError, http.client.HTTPException, ValueError)
