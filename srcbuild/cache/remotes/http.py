"""An HTTP(S) index written by ``srcbuild cache index`` as a pull-only remote.

It reads the PEP 503 pages (``simple/``, ``simple/<project>/``), keeps the links whose
``data-srcbuild-fingerprint`` matches, and reads the manifest beside each wheel
(``<wheel>.manifest.json``) and its signature (``<wheel>.manifest.json.sig``, when the index was
signed). Nothing is trusted: every request goes through ``netio.Session`` (redirects only to the
index's own server, connect, read and total deadlines that fire on a trickle, caps on requests
and bytes per command), every page and manifest is read within a size limit, the wheel is
streamed into the caller's staging file and stopped past the size its manifest states, and the
transfer hashes it on arrival and compares it with both the manifest and the link's ``#sha256=``.
"""

from __future__ import annotations

import contextlib
import urllib.error
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlparse

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.netio import NETWORK_ERRORS, Session
from srcbuild.cache.netlimits import NetLimits
from srcbuild.cache.simple_index import FINGERPRINT_ATTR, SIMPLE_DIR
from srcbuild.cache.store import CacheEntry
from srcbuild.errors import CacheIntegrityError, HostError, NotFoundError, SrcbuildError, UsageError
from srcbuild.limits import MAX_LOG, MAX_MANIFEST, MAX_PAGE, MAX_SIGNATURE, MAX_WHEEL

_NETWORK_ERRORS = NETWORK_ERRORS


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append({k: v or "" for k, v in attrs})


def parse_links(page: bytes, where: str) -> list[dict[str, str]]:
    """The ``<a>`` tags of an index page; CacheIntegrityError when it is not UTF-8 HTML."""
    try:
        text = page.decode("utf-8")
    except UnicodeDecodeError:
        raise CacheIntegrityError(f"{where}: the page is not UTF-8 text", "check the index server") from None
    parser = _Links()
    try:
        parser.feed(text)
        parser.close()
    except (ValueError, AssertionError) as exc:
        raise CacheIntegrityError(f"{where}: not an HTML page ({exc})", "check the index server") from None
    return parser.links


class HttpIndexRemote:
    """A pull-only remote: the simple index of another machine's store."""

    writable = False

    def __init__(self, url: str, limits: NetLimits | None = None) -> None:
        self.url = url
        parsed = urlparse(url)  # ValueError for http://[::1 (open_remote reports it)
        _ = parsed.port  # ValueError for a port out of range
        if not parsed.hostname:
            raise UsageError(f"remote {url}: no host name", "write it as http://host:port/")
        root = url if url.endswith("/") else url + "/"
        if root.rstrip("/").endswith("/" + SIMPLE_DIR):
            root = root.rstrip("/")[: -len(SIMPLE_DIR)]
        self.root = root
        self.netloc = parsed.netloc
        self._wheel_urls: dict[tuple[str, str], tuple[str, str]] = {}  # (fp, file) -> (url, link sha256)
        self.session = Session(self.root, limits)
        self.refused: list[tuple[str, str]] = []  # (entry, why) the last listing left out

    def _on_server(self, url: str) -> bool:
        parsed = urlparse(url)
        return parsed.scheme in ("http", "https") and parsed.netloc == self.netloc

    def _open(self, url: str, what: str) -> Any:
        if not self._on_server(url):
            raise CacheIntegrityError(
                f"{self.url}: {what} points off the index server ({url[:200]})", "check the index"
            )
        try:
            return self.session.open(url)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise FileNotFoundError(url) from None
            raise HostError(f"{url}: HTTP {exc.code} while reading {what}", "check the index server") from None
        except _NETWORK_ERRORS as exc:
            reason = getattr(exc, "reason", exc)
            raise NotFoundError(
                f"{self.url}: cannot read {what} ({reason})",
                "check that `srcbuild cache serve` (or another web server) runs there and is reachable",
            ) from None

    def _get(self, url: str, what: str, limit: int = MAX_PAGE) -> bytes:
        with contextlib.closing(self._open(url, what)) as response:
            try:
                return self.session.read(response, limit, f"{url[:200]} ({what})")
            except _NETWORK_ERRORS as exc:
                raise HostError(f"{self.url}: reading {what} failed ({exc})", "try again") from None

    def check(self, for_push: bool = False) -> None:
        """UsageError unless the root serves a simple index."""
        simple = urljoin(self.root, SIMPLE_DIR + "/")
        try:
            parse_links(self._get(simple, "the project list"), simple)
        except FileNotFoundError:
            raise UsageError(
                f"{self.url}: no simple index at {simple}",
                "point --remote at the root that `srcbuild cache index` wrote",
            ) from None

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        simple = urljoin(self.root, SIMPLE_DIR + "/")
        try:
            projects = parse_links(self._get(simple, "the project list"), simple)
        except FileNotFoundError:
            raise UsageError(
                f"{self.url}: no simple index at {simple}",
                "point --remote at the root that `srcbuild cache index` wrote",
            ) from None
        found = []
        self.refused = []
        for project in projects:
            page_url = urljoin(simple, project.get("href", ""))
            try:
                links = parse_links(self._get(page_url, "a project page"), page_url)
            except FileNotFoundError:
                self.refused.append((page_url[:200], "the project page is missing (HTTP 404)"))
                continue
            except (ValueError, CacheIntegrityError, HostError) as exc:
                self._refuse(page_url, exc)
                continue
            for link in links:
                link_fp = link.get(FINGERPRINT_ATTR, "")
                if not link_fp or (fp is not None and link_fp != fp):
                    continue
                wheel_url, fragment = urldefrag(urljoin(page_url, link.get("href", "")))
                try:
                    where = wheel_url[:200] + ".manifest.json"
                    text = self._get(wheel_url + ".manifest.json", "a manifest", MAX_MANIFEST)
                    manifest = Manifest.loads(text, where)
                except FileNotFoundError:
                    self.refused.append((wheel_url[:200], "its manifest is missing (HTTP 404)"))
                    continue  # an entry without a readable manifest is never used
                except (ValueError, CacheIntegrityError, HostError) as exc:
                    self._refuse(wheel_url, exc)
                    continue
                link_sha = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else ""
                self._wheel_urls[(manifest.fingerprint, manifest.wheel)] = (wheel_url, link_sha)
                found.append(manifest)
        return found

    def _refuse(self, url: str, exc: Exception) -> None:
        """Record an entry the listing left out; past a cap of the session the listing stops."""
        if self.session.over_budget:
            raise exc
        self.refused.append((url[:200], exc.message if isinstance(exc, SrcbuildError) else str(exc)))

    def _url_of(self, manifest: Manifest) -> tuple[str, str]:
        return self._wheel_urls.get(
            (manifest.fingerprint, manifest.wheel), (urljoin(self.root, "files/" + manifest.wheel), "")
        )

    def signature(self, manifest: Manifest) -> bytes | None:
        url, _ = self._url_of(manifest)
        try:
            return self._get(url + ".manifest.json.sig", "a signature", MAX_SIGNATURE)
        except FileNotFoundError:
            return None
        except HostError as exc:
            if "larger than" in exc.message:
                return None
            raise

    def fetch(self, manifest: Manifest, wheel_to: Path, log_to: Path) -> bool:
        url, link_sha = self._url_of(manifest)
        if link_sha and link_sha != manifest.sha256:
            raise CacheIntegrityError(
                f"{url}: the index link says sha256 {link_sha}, the manifest says {manifest.sha256}",
                "the index was changed by hand or is damaged; rebuild it with `srcbuild cache index`",
            )
        try:
            with contextlib.closing(self._open(url, manifest.wheel)) as response, open(wheel_to, "wb") as out:
                self.session.read(response, manifest.size or MAX_WHEEL, f"{manifest.wheel} from {self.url}", out)
        except FileNotFoundError:
            raise CacheIntegrityError(f"{url}: the wheel is missing (HTTP 404)", "rebuild the index there") from None
        except _NETWORK_ERRORS as exc:
            raise NotFoundError(f"{url}: download failed ({getattr(exc, 'reason', exc)})", "try again") from None
        try:
            log_to.write_bytes(self._get(url + ".build.log", "the build log", MAX_LOG))
        except (FileNotFoundError, SrcbuildError):
            return False
        return True

    def push(self, entry: CacheEntry, signature: bytes | None = None) -> bool:
        raise UsageError(
            f"{self.url} is an HTTP index and is read-only",
            "push to a directory or s3:// remote, or run `srcbuild cache index` on the serving machine",
        )
