"""An HTTP(S) index written by ``srcbuild cache index`` as a pull-only remote.

It reads the PEP 503 pages (``simple/``, ``simple/<project>/``), keeps the links whose
``data-srcbuild-fingerprint`` matches, and reads the manifest beside each wheel
(``<wheel>.manifest.json``). Nothing is trusted: the transfer hashes the wheel on arrival and
compares it with both the manifest and the link's ``#sha256=``.
"""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.simple_index import FINGERPRINT_ATTR, SIMPLE_DIR
from srcbuild.cache.store import CacheEntry
from srcbuild.errors import CacheIntegrityError, HostError, NotFoundError, UsageError

TIMEOUT = 30.0


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append({k: v or "" for k, v in attrs})


def _links(text: str) -> list[dict[str, str]]:
    parser = _Links()
    parser.feed(text)
    return parser.links


class HttpIndexRemote:
    """A pull-only remote: the simple index of another machine's store."""

    writable = False

    def __init__(self, url: str) -> None:
        self.url = url
        root = url if url.endswith("/") else url + "/"
        if root.rstrip("/").endswith("/" + SIMPLE_DIR):
            root = root.rstrip("/")[: -len(SIMPLE_DIR)]
        self.root = root
        self._wheel_urls: dict[tuple[str, str], tuple[str, str]] = {}  # (fp, file) -> (url, link sha256)

    def _get(self, url: str, what: str) -> bytes:
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise FileNotFoundError(url) from None
            raise HostError(f"{url}: HTTP {exc.code} while reading {what}", "check the index server") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise NotFoundError(
                f"{self.url}: cannot read {what} ({reason})",
                "check that `srcbuild cache serve` (or another web server) runs there and is reachable",
            ) from None

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        simple = urljoin(self.root, SIMPLE_DIR + "/")
        try:
            projects = _links(self._get(simple, "the project list").decode("utf-8"))
        except FileNotFoundError:
            raise UsageError(
                f"{self.url}: no simple index at {simple}",
                "point --remote at the root that `srcbuild cache index` wrote",
            ) from None
        found = []
        for project in projects:
            page_url = urljoin(simple, project.get("href", ""))
            try:
                page = self._get(page_url, "a project page").decode("utf-8")
            except FileNotFoundError:
                continue
            for link in _links(page):
                link_fp = link.get(FINGERPRINT_ATTR, "")
                if not link_fp or (fp is not None and link_fp != fp):
                    continue
                wheel_url, fragment = urldefrag(urljoin(page_url, link.get("href", "")))
                try:
                    text = self._get(wheel_url + ".manifest.json", "a manifest").decode("utf-8")
                    manifest = Manifest.loads(text, wheel_url + ".manifest.json")
                except (FileNotFoundError, CacheIntegrityError, UnicodeDecodeError):
                    continue  # an entry without a readable manifest is never used
                link_sha = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else ""
                self._wheel_urls[(manifest.fingerprint, manifest.wheel)] = (wheel_url, link_sha)
                found.append(manifest)
        return found

    def fetch(self, manifest: Manifest, dest_dir: Path) -> tuple[Path, Path | None]:
        url, link_sha = self._wheel_urls.get(
            (manifest.fingerprint, manifest.wheel), (urljoin(self.root, "files/" + manifest.wheel), "")
        )
        if link_sha and link_sha != manifest.sha256:
            raise CacheIntegrityError(
                f"{url}: the index link says sha256 {link_sha}, the manifest says {manifest.sha256}",
                "the index was changed by hand or is damaged; rebuild it with `srcbuild cache index`",
            )
        wheel = dest_dir / manifest.wheel
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response, open(wheel, "wb") as out:
                shutil.copyfileobj(response, out, 1 << 20)
        except (urllib.error.URLError, OSError) as exc:
            raise NotFoundError(f"{url}: download failed ({getattr(exc, 'reason', exc)})", "try again") from None
        log: Path | None = dest_dir / "build.log"
        try:
            log.write_bytes(self._get(url + ".build.log", "the build log"))  # type: ignore[union-attr]
        except (FileNotFoundError, HostError, NotFoundError):
            log = None
        return wheel, log

    def push(self, entry: CacheEntry) -> bool:
        raise UsageError(
            f"{self.url} is an HTTP index and is read-only",
            "push to a directory or s3:// remote, or run `srcbuild cache index` on the serving machine",
        )
