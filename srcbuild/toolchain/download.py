"""Downloading a file whose sha256 the data records: resumable, mirrorable, verified, with progress.

``Downloader.fetch(artifact)`` returns the path of the verified file in the downloads directory
(``<sha256>-<file name>``), fetching only what is missing:

- a file already there and verified is used as is;
- a ``.part`` file left by an interrupted download is continued with an HTTP range request
  (``Range: bytes=N-``); a server that answers 200 instead of 206 sends the whole file again;
- a URL on NVIDIA's download hosts goes to ``SRCBUILD_NVIDIA_MIRROR`` instead when it is set,
  with the same path (a mirror keeps NVIDIA's directory layout);
- an artifact without a sha256 is refused before any byte is fetched, and a file whose sha256
  differs is deleted and refused: nothing unverified is ever used;
- ``offline`` refuses every download with an error that says what was needed;
- a failed download is one line naming the URL and ``SRCBUILD_NVIDIA_MIRROR``.

Progress goes to a stream: a redrawn line on a terminal, a plain line every 10 % otherwise.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from pathlib import Path
from typing import IO

from srcbuild.errors import CacheIntegrityError, HostError, MirrorMissing
from srcbuild.files import human_size, sha256_file
from srcbuild.records import record

NVIDIA_HOSTS = ("developer.download.nvidia.com", "developer.nvidia.com")
MIRROR_VAR = "SRCBUILD_NVIDIA_MIRROR"
CHUNK = 1 << 20
TIMEOUT = 30.0  # seconds without a byte before a connection counts as failed


@record
class Artifact:
    """A file to download: where from, its sha256 from the data, its size when the data knows it."""

    url: str
    sha256: str | None
    size: int | None = None

    @property
    def file_name(self) -> str:
        return Path(urllib.parse.urlparse(self.url).path).name or "download"


@record
class Fetched:
    path: Path
    url: str  # where the bytes came from (the mirror's URL when one was used)
    fetched_bytes: int  # bytes transferred by this call (0 when the file was already there)
    size: int



def download_lock(final: Path) -> Path:
    """The lock one download (and ``toolchain gc``) holds while its ``.part`` file may change."""
    return final.parent / ".locks" / (final.name + ".lock")


def mirrored_url(url: str, mirror: str | None) -> str:
    """``url`` on the mirror when it is on one of NVIDIA's hosts and a mirror is set."""
    if not mirror:
        return url
    parsed = urllib.parse.urlparse(url)
    if parsed.hostname not in NVIDIA_HOSTS:
        return url
    if "://" not in mirror:  # a plain directory: the same layout, read as file://
        mirror = Path(mirror).absolute().as_uri()
    return mirror.rstrip("/") + "/" + parsed.path.lstrip("/")


PIPE_EVERY = 5.0  # seconds between two progress lines in a pipe or a log (or each tenth, when sooner)


class Progress:
    """Size, percentage, speed and ETA of one download: redrawn on a terminal; to a pipe or a log,
    a line at each tenth done and at least every ``PIPE_EVERY`` seconds (size unknown: by time alone)."""

    def __init__(self, stream: IO[str] | None, label: str, total: int | None, start_at: int) -> None:
        self.stream = stream
        self.label = label
        self.total = total
        self.start_at = start_at
        self.started = time.monotonic()
        self.tty = bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())
        self.next_step = 10
        self.last_draw = 0.0
        self.last_line = self.started

    def line(self, done: int) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        speed = (done - self.start_at) / elapsed
        if self.total:
            pct = min(100, int(done * 100 / self.total))
            left = (self.total - done) / speed if speed > 0 else 0.0
            text = f"{self.label}: {human_size(done)} of {human_size(self.total)} ({pct}%)"
            return f"{text}, {human_size(speed)}/s, ETA {int(left)}s"
        return f"{self.label}: {human_size(done)}, {human_size(speed)}/s"

    def update(self, done: int) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        if self.tty:
            if now - self.last_draw >= 0.2:
                self.stream.write("\r" + self.line(done)[:79].ljust(79))
                self.stream.flush()
                self.last_draw = now
            return
        tenth = bool(self.total) and done * 100 >= self.next_step * (self.total or 1)
        if tenth or now - self.last_line >= PIPE_EVERY:
            print(self.line(done), file=self.stream, flush=True)
            self.last_line = now
            while self.total and self.next_step <= done * 100 / self.total:
                self.next_step += 10

    def finish(self, done: int) -> None:
        if self.stream is None:
            return
        if self.tty:
            self.stream.write("\r" + self.line(done)[:79].ljust(79) + "\n")
            self.stream.flush()


class Downloader:
    """Fetches artifacts into ``directory``; see the module docstring for the rules."""

    def __init__(
        self,
        directory: Path,
        mirror: str | None = None,
        offline: bool = False,
        stream: IO[str] | None = None,
        timeout: float = TIMEOUT,
        mirror_dir: str | None = None,
    ) -> None:
        self.directory = directory
        self.mirror = mirror
        self.mirror_dir = mirror_dir  # --mirror-dir: the mirror is the only place to fetch from
        self.offline = offline
        self.stream = stream
        self.timeout = timeout

    def target(self, artifact: Artifact) -> Path:
        return self.directory / f"{artifact.sha256}-{artifact.file_name}"

    def fetch(self, artifact: Artifact) -> Fetched:
        if not artifact.sha256:
            raise CacheIntegrityError(
                f"{artifact.url}: no sha256 for this file in srcbuild's data, so it is not downloaded",
                f"add its sha256 to a data file in a directory named by SRCBUILD_TOOLCHAIN_DATA, "
                f"or install it yourself and point {artifact.file_name}'s tool at it",
            )
        from filelock import FileLock  # a download loads the lock, the HTTP client and TLS; a report does not

        final = self.target(artifact)
        (self.directory / ".locks").mkdir(parents=True, exist_ok=True)
        with FileLock(str(download_lock(final))):
            if final.is_file():
                if sha256_file(final) == artifact.sha256:
                    return Fetched(final, artifact.url, 0, final.stat().st_size)
                final.unlink()
            url = mirrored_url(artifact.url, self.mirror)
            if self.mirror_dir and url == artifact.url:
                raise MirrorMissing(
                    f"{artifact.url}: not on NVIDIA's site, so not in the mirror {self.mirror_dir} "
                    "(--mirror-dir fetches nothing else)",
                    "install it yourself on this machine, or run without --mirror-dir where it can be reached",
                )
            if self.offline:
                raise HostError(
                    f"{artifact.file_name} is needed and --offline forbids downloading it from {url}",
                    "run the same command without --offline once, or copy the file into "
                    f"{self.directory} as {final.name}",
                )
            part = Path(str(final) + ".part")
            fetched = self._download(url, part, artifact.size)
            digest = sha256_file(part)
            if digest != artifact.sha256:
                part.unlink()
                raise CacheIntegrityError(
                    f"{url}: sha256 {digest} does not match {artifact.sha256} recorded in srcbuild's data; "
                    "the file was deleted",
                    f"check {MIRROR_VAR} (a mirror serving other files), then run the same command again",
                )
            os.replace(part, final)
        return Fetched(final, url, fetched, final.stat().st_size)

    def _download(self, url: str, part: Path, size: int | None) -> int:
        import http.client
        import urllib.error
        import urllib.request

        have = part.stat().st_size if part.is_file() else 0
        if size is not None and have > size:
            part.unlink()
            have = 0
        if size is not None and have == size:
            return 0
        request = urllib.request.Request(url, headers={"User-Agent": "srcbuild"})
        if have:
            request.add_header("Range", f"bytes={have}-")
        try:
            response = urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and have:  # the part file is already complete (or bigger)
                return 0
            raise self._failed(url, f"HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise self._failed(url, str(reason)) from None
        fetched = 0
        with response:
            status = getattr(response, "status", 200)
            mode = "ab" if have and status == 206 else "wb"
            if mode == "wb":
                have = 0
            length = response.headers.get("Content-Length")
            total = size if size is not None else (have + int(length) if length and length.isdigit() else None)
            progress = Progress(self.stream, Path(urllib.parse.urlparse(url).path).name, total, have)
            done = have
            try:
                with open(part, mode) as out:
                    while True:
                        block = response.read(CHUNK)
                        if not block:
                            break
                        out.write(block)
                        fetched += len(block)
                        done += len(block)
                        progress.update(done)
            except (OSError, http.client.HTTPException) as exc:  # cut off: the part file stays for a resume
                why = type(exc).__name__ if isinstance(exc, http.client.IncompleteRead) else str(exc)
                raise self._failed(url, f"{why} after {human_size(done)}") from None
            progress.finish(done)
        if total is not None and done < total:
            raise self._failed(url, f"connection closed after {human_size(done)} of {human_size(total)}")
        return fetched

    def _failed(self, url: str, why: str) -> HostError | MirrorMissing:
        if self.mirror_dir:
            return MirrorMissing(
                f"{Path(urllib.parse.urlparse(url).path).name} is not in the mirror {self.mirror_dir} ({url}: {why})",
                f"add it on a connected machine: srcbuild mirror create {self.mirror_dir} --recipe RECIPE",
            )
        where = f"the mirror in {MIRROR_VAR}" if self.mirror else f"{MIRROR_VAR} is not set"
        path = urllib.parse.urlparse(url).path
        return HostError(
            f"download failed: {url}: {why} ({where})",
            f"run the same command again to resume; or put the file in a directory under the same path "
            f"(DIR{path}) and set {MIRROR_VAR}=DIR (a directory, file:///DIR/ or an http(s) URL with that layout)",
        )
