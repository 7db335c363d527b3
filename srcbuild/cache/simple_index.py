"""A PEP 503 "simple" index of the store, and a small HTTP server for it.

``write_index(cache, out)`` writes::

    out/simple/index.html                 # one link per project
    out/simple/<project>/index.html       # one link per wheel, with #sha256= (PEP 503)
    out/files/<wheel>                      # named with the recipe's local version label
    out/files/<wheel>.manifest.json       # the entry's manifest, describing that file
    out/files/<wheel>.manifest.json.sig   # its signature (``signing``), by the index's key
    out/files/<wheel>.build.log           # when the entry has one

A wheel whose version has no local label is re-labelled on the way (``torch-1.7.1`` becomes
``torch-1.7.1+cu92.sm30``): the ``.dist-info`` directory, ``METADATA``'s ``Version`` and ``RECORD``
are rewritten, because pip checks that the file name and the metadata agree. Each link also
carries ``data-srcbuild-fingerprint`` (pip ignores unknown attributes), so srcbuild can find a
fingerprint's entries by reading one page. Any static file server can serve the result;
``serve`` uses the standard library's.

Signatures: with a signing key, each served manifest is signed by it (a re-labelled wheel is a new
file, so only the publisher can vouch for it); without one, an entry that was pulled signed and
is served unchanged keeps its original signature, and the others are served unsigned. Members are
read through ``limits.read_member`` (bounded, zip-bomb and CRC checked).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import os
import shutil
import tempfile
import zipfile
from dataclasses import replace
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from packaging.utils import canonicalize_name
from packaging.version import Version

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.serve_pool import BoundedHTTPServer
from srcbuild.cache.store import CacheEntry, WheelCache
from srcbuild.errors import CacheIntegrityError
from srcbuild.files import sha256_file, write_atomic
from srcbuild.limits import MAX_MEMBER, check_member, read_member
from srcbuild.records import record

FILES_DIR = "files"
SIMPLE_DIR = "simple"
FINGERPRINT_ATTR = "data-srcbuild-fingerprint"


@record
class IndexedWheel:
    """One wheel as the index serves it."""

    project: str
    filename: str
    sha256: str
    fingerprint: str
    relabelled: bool


def labelled_version(manifest: Manifest) -> str:
    """The version the index serves: the wheel's own when it has a local label, else with the recipe's."""
    version = Version(manifest.version)
    if version.local or not manifest.local_version:
        return str(version)
    return f"{version}+{manifest.local_version}"


def relabel_wheel(source: Path, dest_dir: Path, new_version: str) -> Path:
    """Copy a wheel under ``new_version``: file name, ``.dist-info`` name, METADATA and RECORD."""
    name, rest = source.name.split("-", 2)[0], source.name.split("-", 2)[2]
    new_name = f"{name}-{new_version}-{rest}"
    try:
        zin = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        raise CacheIntegrityError(
            f"{source.name}: not a zip archive ({exc})", "the wheel is damaged; rebuild it"
        ) from None
    with zin:
        dist_info = next(
            (n.split("/", 1)[0] for n in zin.namelist() if n.split("/", 1)[0].endswith(".dist-info")), None
        )
        if dist_info is None:
            raise ValueError(f"{source.name} has no .dist-info directory")
        new_dist_info = f"{dist_info[: -len('.dist-info')].rsplit('-', 1)[0]}-{new_version}.dist-info"
        fd, tmp_name = tempfile.mkstemp(dir=dest_dir, prefix=".relabel-", suffix=".whl")
        os.close(fd)
        tmp = Path(tmp_name)
        records: list[str] = []
        try:
            with zipfile.ZipFile(tmp, "w") as zout:
                for info in zin.infolist():
                    member = info.filename
                    target = new_dist_info + member[len(dist_info) :] if member.startswith(dist_info + "/") else member
                    if target == f"{new_dist_info}/RECORD":
                        continue
                    check_member(info, source.name)
                    data = read_member(zin, info, source.name, MAX_MEMBER)
                    if target == f"{new_dist_info}/METADATA":
                        data = _set_metadata_version(data, new_version)
                    out_info = zipfile.ZipInfo(target, date_time=info.date_time)
                    out_info.external_attr = info.external_attr
                    out_info.compress_type = info.compress_type
                    zout.writestr(out_info, data)
                    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    records.append(f"{target},sha256={digest},{len(data)}")
                records.append(f"{new_dist_info}/RECORD,,")
                # the source's own time stamp, not now: relabelling the same wheel gives the same bytes
                stamps = (i.date_time for i in zin.infolist() if i.filename.endswith("/RECORD"))
                stamp = next(stamps, (1980, 1, 1, 0, 0, 0))
                record_info = zipfile.ZipInfo(f"{new_dist_info}/RECORD", date_time=stamp)
                record_info.compress_type = zipfile.ZIP_DEFLATED
                record_info.external_attr = 0o644 << 16
                zout.writestr(record_info, "\n".join(records) + "\n")
            final = dest_dir / new_name
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                tmp.unlink()
    return final


def _set_metadata_version(data: bytes, version: str) -> bytes:
    lines = data.decode("utf-8", errors="surrogateescape").split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Version:"):
            lines[i] = f"Version: {version}"
            break
        if not line.strip():  # end of the headers
            break
    return "\n".join(lines).encode("utf-8", errors="surrogateescape")


def _sign_served(entry: CacheEntry, served: Manifest, sidecar: Path, signing_key: Path | None) -> None:
    from srcbuild.cache.signing import sign_manifest

    sig = sidecar.with_name(sidecar.name + ".sig")
    if signing_key is not None:
        with tempfile.TemporaryDirectory(prefix="srcbuild-sign-") as work:
            sig.write_bytes(sign_manifest(served, signing_key, Path(work)))
    elif served == entry.manifest and entry.signature_path is not None:
        shutil.copyfile(entry.signature_path, sig)
    else:
        with contextlib.suppress(FileNotFoundError):
            sig.unlink()


def _index_entry(entry: CacheEntry, files: Path, signing_key: Path | None = None) -> tuple[IndexedWheel, Manifest]:
    manifest = entry.manifest
    version = labelled_version(manifest)
    relabelled = version != manifest.version
    served_name = f"{manifest.wheel.split('-', 1)[0]}-{version}-{manifest.wheel.split('-', 2)[2]}"
    target = files / served_name
    sidecar = files / f"{served_name}.manifest.json"
    if target.is_file() and sidecar.is_file():  # written by an earlier run: reuse when it describes this entry
        with contextlib.suppress(Exception):
            old = Manifest.read(sidecar)
            if old.extra.get("original_sha256", old.sha256) == manifest.sha256 and sha256_file(target) == old.sha256:
                _sign_served(entry, old, sidecar, signing_key)
                return IndexedWheel(manifest.package, served_name, old.sha256, manifest.fingerprint, relabelled), old
    if relabelled:
        target = relabel_wheel(entry.wheel_path, files, version)
    else:
        shutil.copyfile(entry.wheel_path, target)
    sha = sha256_file(target)
    served = manifest
    if relabelled:
        served = manifest.with_wheel(
            served_name,
            sha,
            target.stat().st_size,
            original_wheel=manifest.wheel,
            original_sha256=manifest.sha256,
        )
        served = replace(served, version=version)
    sidecar.write_text(served.dumps(), encoding="utf-8")
    _sign_served(entry, served, sidecar, signing_key)
    if entry.log_path is not None:
        shutil.copyfile(entry.log_path, files / f"{served_name}.build.log")
    return IndexedWheel(manifest.package, served_name, sha, manifest.fingerprint, relabelled), served


def write_index(cache: WheelCache, out: Path, signing_key: Path | None = None) -> list[IndexedWheel]:
    """Write the PEP 503 index of every entry of ``cache`` under ``out`` (signed with ``signing_key``).

    Every wheel is checked against its manifest first (``CacheEntry.check_fast``: re-hashed unless
    its file identity is the one recorded when it was last hashed). A damaged one is moved to the
    store's ``damaged/`` and nothing is written: ``CacheIntegrityError`` (exit 7) names it, and the
    next run publishes the entries that are left."""
    entries = [entry for entry in cache.entries() if entry.wheel_path.is_file()]
    for entry in entries:
        try:
            entry.check_fast()
        except CacheIntegrityError as exc:
            moved = cache.move_aside(entry.path)
            where = f"moved aside to {moved}" if moved else "it could not be moved aside"
            raise CacheIntegrityError(
                f"{exc.message}; {where}, not published",
                "no index was written; run the command again to publish the intact entries",
            ) from None
    files = out / FILES_DIR
    files.mkdir(parents=True, exist_ok=True)
    wheels: list[IndexedWheel] = []
    for entry in entries:
        wheels.append(_index_entry(entry, files, signing_key)[0])
    projects: dict[str, list[IndexedWheel]] = {}
    for wheel in wheels:
        projects.setdefault(str(canonicalize_name(wheel.project)), []).append(wheel)
    simple = out / SIMPLE_DIR
    simple.mkdir(parents=True, exist_ok=True)
    for project, items in projects.items():
        links = [
            f'    <a href="../../{FILES_DIR}/{quote(w.filename)}#sha256={w.sha256}" '
            f'{FINGERPRINT_ATTR}="{w.fingerprint}">{html.escape(w.filename)}</a><br/>'
            for w in sorted(items, key=lambda w: w.filename)
        ]
        _write_page(simple / project / "index.html", f"Links for {project}", links)
    root_links = [f'    <a href="{quote(p)}/">{html.escape(p)}</a><br/>' for p in sorted(projects)]
    _write_page(simple / "index.html", "Simple index", root_links)
    return wheels


def _write_page(path: Path, title: str, links: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (
        "<!DOCTYPE html>\n<html>\n  <head><title>"
        + html.escape(title)
        + "</title></head>\n  <body>\n    <h1>"
        + html.escape(title)
        + "</h1>\n"
        + "\n".join(links)
        + "\n  </body>\n</html>\n"
    )
    write_atomic(path, text)


class _IndexHandler(SimpleHTTPRequestHandler):
    """The file server of ``cache serve``: a path that cannot name a file of the index (a NUL or
    another control character, a backslash, bytes that are not UTF-8 once decoded) is answered
    400, one the filesystem refuses (too long, not there) 404; never a traceback and an empty reply."""

    def send_head(self) -> Any:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        try:
            decoded = unquote(path, errors="strict")
        except UnicodeDecodeError:
            decoded = "\0"
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in decoded) or "\\" in decoded:
            self.send_error(400, "bad path")
            return None
        try:
            return super().send_head()
        except (ValueError, OSError):
            self.send_error(404, "not found")
            return None


    def log_error(self, format: str, *args: Any) -> None:
        # a client that stopped reading its answer: the bounded server's one line, request log or not
        if format.startswith("Request timed out") and isinstance(self.server, BoundedHTTPServer):
            why = f"stopped reading its answer for {self.server.io_timeout:g} s"
            self.server.note_dropped(self.client_address, why)
            return
        super().log_error(format, *args)


class _QuietHandler(_IndexHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def make_server(
    directory: Path, host: str = "127.0.0.1", port: int = 0, log_requests: bool = False
) -> BoundedHTTPServer:
    """An HTTP server for ``directory`` (port 0 picks a free one: ``server.server_address``) with a
    fixed number of threads and per-connection timeouts (``serve_pool``); ``log_requests`` prints a
    line per request on stderr (``SRCBUILD_SERVE_LOG``). Every dropped client is a line either way."""
    handler = partial(_IndexHandler if log_requests else _QuietHandler, directory=str(directory))
    return BoundedHTTPServer((host, port), handler)
