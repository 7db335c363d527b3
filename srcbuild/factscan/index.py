"""What the package index pip is configured with lists for a project: its wheels, with version,
size, sha256 and upload time.

The indexes are pip's own (``ext.source.pip_indexes``: ``index-url`` from ``pip config list`` or
``PIP_INDEX_URL``, else pip's default, then the extra indexes), read at run time; no host is named
here. A project page is read as PEP 691 JSON where the index serves it (file sizes per PEP 700),
else as a PEP 503 HTML page (a ``file://`` index: the size is the file's own). An index is hostile
input: a page is read up to ``MAX_PAGE`` bytes, and a file without a sha256 is listed but never
downloaded.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from srcbuild.errors import HostError
from srcbuild.records import record

MAX_PAGE = 64 << 20  # torch's JSON page is a few MiB
TIMEOUT = 60.0
ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


@record
class IndexFile:
    """One wheel a project page lists."""

    project: str  # canonical name
    version: Version
    filename: str
    url: str  # without the #sha256= fragment
    sha256: str | None
    size: int | None
    uploaded: str | None  # ISO date, when the index says
    platform_tags: tuple[str, ...]
    python_tags: tuple[str, ...]
    metadata: bool = False  # the index serves its METADATA beside it (PEP 658/714: URL + ".metadata")

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "version": str(self.version),
            "size": self.size,
            "sha256": self.sha256,
            "uploaded": self.uploaded,
        }


def project_files(project: str, indexes: Iterable[str]) -> list[IndexFile]:
    """Every wheel of ``project`` the indexes list (the first listing of a file name wins)."""
    name = canonicalize_name(project)
    seen: dict[str, IndexFile] = {}
    for base in indexes:
        page_url = base.rstrip("/") + f"/{name}/"
        page = _read_page(page_url)
        if page is None:
            continue
        body, content_type = page
        for found in _files(name, page_url, body, content_type):
            seen.setdefault(found.filename, found)
    return sorted(seen.values(), key=lambda f: (f.version, f.filename))


def _read_page(url: str) -> tuple[str, str] | None:
    if url.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
        for candidate in (os.path.join(path, "index.html"), path.rstrip("/")):
            if os.path.isfile(candidate):
                with open(candidate, "rb") as handle:
                    return _bounded(handle.read(MAX_PAGE + 1), url), "text/html"
        return None
    request = urllib.request.Request(url, headers={"Accept": ACCEPT, "User-Agent": "srcbuild"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return _bounded(response.read(MAX_PAGE + 1), url), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise HostError(
            f"{url}: HTTP {exc.code} {exc.reason}", "check pip's index configuration (pip config list)"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HostError(
            f"{url}: {reason}", "check the network and pip's index configuration (pip config list)"
        ) from None


def _bounded(data: bytes, url: str) -> str:
    if len(data) > MAX_PAGE:
        raise HostError(
            f"{url}: the page is larger than {MAX_PAGE >> 20} MiB", "check the index pip is configured with"
        )
    return data.decode("utf-8", "replace")


def _files(project: str, page_url: str, body: str, content_type: str) -> list[IndexFile]:
    if "json" in content_type:
        try:
            data = json.loads(body)
        except ValueError:
            raise HostError(f"{page_url}: not a JSON project page", "check the index pip is configured with") from None
        entries = data.get("files", []) if isinstance(data, dict) else []
        rows = []
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            hashes: dict[str, Any] = entry["hashes"] if isinstance(entry.get("hashes"), dict) else {}
            size = entry.get("size")
            uploaded = entry.get("upload-time")
            rows.append(
                (
                    str(entry.get("filename", "")),
                    urllib.parse.urljoin(page_url, str(entry.get("url", ""))).split("#")[0],
                    hashes.get("sha256") if isinstance(hashes.get("sha256"), str) else None,
                    size if isinstance(size, int) and size >= 0 else None,
                    uploaded[:10] if isinstance(uploaded, str) else None,
                    bool(entry.get("core-metadata") or entry.get("data-dist-info-metadata")),
                )
            )
    else:
        from srcbuild.simple_page import page_files

        rows = []
        for filename, url in page_files(page_url, body, content_type):
            base, _, fragment = url.partition("#")
            digest = fragment[len("sha256="):] if fragment.startswith("sha256=") else None
            rows.append((filename, base, digest, _local_size(base), None, False))
    out = []
    for filename, url, digest, size, uploaded, metadata in rows:
        parsed = _wheel(filename)
        if parsed is None or canonicalize_name(parsed[0]) != project:
            continue
        _name, version, tags = parsed
        out.append(
            IndexFile(
                project=project,
                version=version,
                filename=filename,
                url=url,
                sha256=digest.lower() if digest and len(digest) == 64 else None,
                size=size,
                uploaded=uploaded,
                platform_tags=tuple(sorted({t.platform for t in tags})),
                python_tags=tuple(sorted({t.interpreter for t in tags})),
                metadata=metadata,
            )
        )
    return out


def _wheel(filename: str) -> tuple[str, Version, frozenset[Any]] | None:
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    return name, version, tags


def _local_size(url: str) -> int | None:
    if not url.startswith("file://"):
        return None
    try:
        return os.stat(urllib.parse.unquote(urllib.parse.urlsplit(url).path)).st_size
    except OSError:
        return None


MAX_METADATA = 1 << 20
MAX_RANGE_READS = 64  # a wheel's central directory and one member take a handful


def read_metadata(wheel: IndexFile) -> str:
    """The wheel's ``*.dist-info/METADATA`` without downloading the wheel: the index's ``.metadata``
    file where it serves one (PEP 658), else ranged reads of the zip (its central directory, then the
    member), else the local file of a ``file://`` index. At most ``MAX_METADATA`` bytes."""
    import zipfile

    if wheel.url.startswith("file://"):
        source: Any = urllib.parse.unquote(urllib.parse.urlsplit(wheel.url).path)
    elif wheel.metadata:
        request = urllib.request.Request(wheel.url + ".metadata", headers={"User-Agent": "srcbuild"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return _bounded_text(response.read(MAX_METADATA + 1), wheel.filename)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise HostError(f"{wheel.url}.metadata: {getattr(exc, 'reason', exc)}", "run it again") from None
    else:
        if wheel.size is None:
            raise HostError(f"{wheel.filename}: the index gives no size, so it cannot be read in ranges", "")
        source = _Ranges(wheel.url, wheel.size)
    try:
        with zipfile.ZipFile(source) as zf:
            member = next(
                (i for i in zf.infolist() if i.filename.endswith(".dist-info/METADATA") and i.filename.count("/") == 1),
                None,
            )
            if member is None or member.file_size > MAX_METADATA:
                raise HostError(f"{wheel.filename}: no METADATA under {MAX_METADATA >> 20} MiB in it", "")
            return _bounded_text(zf.read(member), wheel.filename)
    except (zipfile.BadZipFile, OSError) as exc:
        raise HostError(f"{wheel.filename}: not a readable wheel ({exc})", "check the index") from None


def _bounded_text(data: bytes, name: str) -> str:
    if len(data) > MAX_METADATA:
        raise HostError(f"{name}: METADATA larger than {MAX_METADATA >> 20} MiB", "check the index")
    return data.decode("utf-8", "replace")


class _Ranges:
    """A read-only file over HTTP Range requests (zipfile reads the end, then one member)."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos, self.reads = url, size, 0, 0

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        if end - self.pos > MAX_PAGE:
            raise OSError(f"a read of {end - self.pos} bytes; a METADATA read needs far less")
        self.reads += 1
        if self.reads > MAX_RANGE_READS:
            raise OSError("too many range reads for one METADATA")
        request = urllib.request.Request(
            self.url, headers={"Range": f"bytes={self.pos}-{end - 1}", "User-Agent": "srcbuild"}
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                if getattr(response, "status", 206) != 206:
                    raise OSError("the server ignores Range requests")
                data: bytes = response.read(end - self.pos + 1)
        except urllib.error.URLError as exc:
            raise OSError(str(exc.reason)) from None
        self.pos += len(data)
        return data
