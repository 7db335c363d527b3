"""An existing package index that accepts uploads (pypiserver, devpi) as a push-only remote.

``--remote upload+http://wheelhost:8080/`` (or ``upload+https://``) names the index's upload URL
(the URL ``twine upload --repository-url`` takes, written after ``upload+``). Each pushed wheel
is uploaded with twine (``python -m twine upload``; credentials come from twine's usual
``TWINE_USERNAME``/``TWINE_PASSWORD`` or its keyring, never from srcbuild's command line, so
they are never printed), under the recipe's labelled version like ``cache index`` serves it.
After the upload the wheel is read back from the index's PEP 503 page
(``<url>/simple/<project>/``, or devpi's ``<url>/+simple/<project>/``) and its sha256 compared
with the file sent: an index that stored something else is exit 7. A wheel the index already has
with the same sha256 is ``present``; with another one, it is refused (indexes do not overwrite).

Only wheels move: an index keeps no srcbuild manifest or signature, so machines install from it
with plain ``pip install --index-url`` and srcbuild pulls from a directory, S3 or ``cache serve``.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import tempfile
import urllib.error
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

from srcbuild import proc
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.netio import NETWORK_ERRORS, Session
from srcbuild.cache.netlimits import NetLimits
from srcbuild.cache.remotes.http import parse_links
from srcbuild.cache.simple_index import labelled_version, relabel_wheel
from srcbuild.cache.store import CacheEntry
from srcbuild.errors import CacheIntegrityError, HostError, StepFailed, UsageError
from srcbuild.limits import MAX_PAGE, MAX_WHEEL

SCHEME_PREFIX = "upload+"
SIMPLE_PAGES = ("simple/", "+simple/")  # pypiserver and most indexes; devpi
_NETWORK_ERRORS = NETWORK_ERRORS


def normalize(name: str) -> str:
    """PEP 503's project name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


class UploadIndexRemote:
    """Pushes wheels to an index through twine's upload protocol; pulls nothing (see the docstring)."""

    writable = True

    def __init__(self, url: str, environ: Mapping[str, str], limits: NetLimits | None = None) -> None:
        self.url = url
        self.environ = dict(environ)  # twine runs with it: its TWINE_* credentials
        target = url[len(SCHEME_PREFIX) :] if url.startswith(SCHEME_PREFIX) else url
        parsed = urlparse(target)
        _ = parsed.port  # ValueError for a port out of range (open_remote reports it)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise UsageError(f"remote {url}: not an upload URL", "write it as upload+http://host:port/")
        self.upload_url = target if target.endswith("/") else target + "/"
        self.session = Session(self.upload_url, limits)
        self.refused: list[tuple[str, str]] = []  # an index lists no srcbuild entries to refuse

    # -- reading the index -------------------------------------------------------------------
    def _get(self, url: str, limit: int, what: str) -> bytes | None:
        """The body at ``url`` (None on 404); HostError when the index cannot be reached."""
        try:
            with contextlib.closing(self.session.open(url)) as response:
                return self.session.read(response, limit, f"{url[:200]} ({what})")
        except CacheIntegrityError:
            if self.session.off_origin is not None:  # pypiserver sends projects it lacks to another index
                return None
            raise
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise HostError(f"{url}: HTTP {exc.code} while reading {what}", "check the index server") from None
        except _NETWORK_ERRORS as exc:
            raise HostError(
                f"{self.url}: cannot read {what} ({getattr(exc, 'reason', exc)})",
                "check that the index server runs and is reachable",
            ) from None

    def _project_files(self, project: str) -> dict[str, str] | None:
        """File name -> absolute URL of the project's page; None when the index has no simple pages."""
        for simple in SIMPLE_PAGES:
            root = urljoin(self.upload_url, simple)
            if self._get(root, MAX_PAGE, "the project list") is None:
                continue
            page_url = urljoin(root, normalize(project) + "/")
            page = self._get(page_url, MAX_PAGE, "a project page")
            if page is None:
                return {}
            files: dict[str, str] = {}
            for link in parse_links(page, page_url):
                href, _fragment = urldefrag(urljoin(page_url, link.get("href", "")))
                files[href.rsplit("/", 1)[-1]] = href
            return files
        return None

    def _served_sha256(self, url: str) -> str:
        body = self._get(url, MAX_WHEEL, "the uploaded wheel")
        if body is None:
            raise CacheIntegrityError(f"{url}: listed by the index but missing (HTTP 404)", "check the index server")
        return hashlib.sha256(body).hexdigest()

    def check(self, for_push: bool = False) -> None:
        """UsageError unless the URL serves a simple index (``simple/`` or ``+simple/``)."""
        if self._project_files("srcbuild-probe") is None:
            pages = " or ".join(urljoin(self.upload_url, s) for s in SIMPLE_PAGES)
            raise UsageError(
                f"{self.url}: no package index at {pages}",
                "pass the index's upload URL, e.g. upload+http://wheelhost:8080/ for pypiserver",
            )

    # -- the remote interface ----------------------------------------------------------------
    def manifests(self, fp: str | None = None) -> list[Manifest]:
        raise UsageError(
            f"{self.url} is a package index: it keeps no srcbuild manifests, so srcbuild cannot pull from it",
            f"install from it with `pip install --index-url {urljoin(self.upload_url, 'simple/')} PACKAGE`",
        )

    def signature(self, manifest: Manifest) -> bytes | None:
        return None

    def fetch(self, manifest: Manifest, wheel_to: Path, log_to: Path) -> bool:
        raise self._no_pull()

    def _no_pull(self) -> UsageError:
        try:
            self.manifests()
        except UsageError as exc:
            return exc
        raise AssertionError("manifests() always refuses")  # pragma: no cover

    def push(self, entry: CacheEntry, signature: bytes | None = None) -> bool:
        """Upload the entry's wheel (relabelled like ``cache index`` serves it), then check the copy."""
        manifest = entry.manifest
        version = labelled_version(manifest)
        with tempfile.TemporaryDirectory(prefix="srcbuild-upload-") as work:
            wheel = entry.wheel_path
            if version != manifest.version:
                wheel = relabel_wheel(entry.wheel_path, Path(work), version)
            sent_sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
            listed = self._project_files(manifest.package) or {}
            if wheel.name in listed:
                served = self._served_sha256(listed[wheel.name])
                if served == sent_sha:
                    return False
                raise CacheIntegrityError(
                    f"{self.url}: already has {wheel.name} with sha256 {served[:12]}, not this build's {sent_sha[:12]}",
                    "indexes do not replace a file: remove it on the index first, or push to another index",
                )
            self._twine_upload(wheel)
            listed = self._project_files(manifest.package) or {}
            if wheel.name not in listed:
                raise CacheIntegrityError(
                    f"{self.url}: twine uploaded {wheel.name} but the index does not list it",
                    "check the index server's log",
                )
            served = self._served_sha256(listed[wheel.name])
            if served != sent_sha:
                raise CacheIntegrityError(
                    f"{self.url}: the index serves {wheel.name} with sha256 {served}, the upload was {sent_sha}",
                    "the copy was damaged on the way or changed on the index; remove it there and push again",
                )
        return True

    def _twine_upload(self, wheel: Path) -> None:
        argv = [sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar"]
        argv += ["--repository-url", self.upload_url, str(wheel)]
        result = proc.run(argv, env=self.environ)
        if any("No module named twine" in line for line in result.tail):
            raise HostError(
                "pushing to a package index needs twine, which is not installed",
                "python -m pip install 'srcbuild[publish]'",
            )
        if not result.ok:
            said = "; ".join(line.strip() for line in result.tail[-3:] if line.strip())
            raise StepFailed(
                f"twine upload of {wheel.name} to {self.upload_url} failed: {said}",
                "set TWINE_USERNAME and TWINE_PASSWORD for the index (any values when it has no authentication)",
            )
