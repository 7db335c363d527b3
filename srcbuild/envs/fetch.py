"""Fetching locked package files and checking them against the hashes the lock recorded.

``fetch_verified`` returns a local path for each package: a ``file://`` URL is read in place, any
other URL is downloaded once into a download cache (``<envs>/.downloads/<sha256>/<file>``). Every
file's sha256 and md5 are compared with the lock; a mismatch is an ``EnvironmentError_`` naming the
package and both hashes, and the bad download is deleted.

``urllib.request`` (which loads ``http.client``, ``ssl`` and ``email``: about 70 ms) is imported by
the download alone: a build imports this module through the environment backends and never
downloads a package.
"""

from __future__ import annotations

import hashlib
import shutil
import urllib.parse
from pathlib import Path
from typing import IO

from srcbuild.envs.lockfile import LockedPackage
from srcbuild.errors import EnvironmentError_


def file_hashes(path: Path) -> tuple[str, str]:
    """(sha256, md5) of a file, read in 1 MiB blocks."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
            md5.update(block)
    return sha.hexdigest(), md5.hexdigest()


def local_path(url: str) -> Path | None:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme != "file":
        return None
    return Path(urllib.parse.unquote(parsed.path))  # what url2pathname does on POSIX


def _download(url: str, dest: Path) -> None:
    import urllib.request

    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise EnvironmentError_(
            f"cannot download {url}: {exc}",
            "check the network, or use a reachable mirror (--channel-mirror NAME=URL / --channel-alias URL)",
        ) from None
    partial.replace(dest)


def verify(package: LockedPackage, path: Path, recorded_by: str = "the lockfile") -> None:
    """Compare a package file with its recorded hashes; raise naming the package and both hashes."""
    sha256, md5 = file_hashes(path)
    for kind, found, expected in (("sha256", sha256, package.sha256), ("md5", md5, package.md5)):
        if expected and found != expected:
            raise EnvironmentError_(
                f"package {package.label} has {kind} {found}, but {recorded_by} records {expected}",
                f"the channel or mirror serves another file than {recorded_by} names: check the mirror, "
                "or re-run `srcbuild lock` if the change is expected",
            )


def fetch_verified(
    package: LockedPackage,
    url: str,
    downloads: Path,
    recorded_by: str = "the lockfile",
    echo: IO[str] | None = None,
) -> Path:
    """A verified local copy of ``package`` fetched from ``url`` (already routed through mirrors).

    Each real download is announced on ``echo`` (a file:// package is read in place, silently).
    """
    path = local_path(url)
    if path is not None:
        if not path.is_file():
            raise EnvironmentError_(
                f"package {package.label} is missing from its channel: {path} does not exist",
                "check the channel or mirror path, or re-run `srcbuild lock` if the channel changed",
            )
        verify(package, path, recorded_by)
        return path
    dest = downloads / (package.sha256 or package.md5 or "unhashed") / package.file_name
    if not dest.is_file():
        if echo is not None:
            print(f"  downloading {package.file_name} from {url.rsplit('/', 2)[0]}", file=echo, flush=True)
        _download(url, dest)
    try:
        verify(package, dest, recorded_by)
    except EnvironmentError_:
        dest.unlink(missing_ok=True)
        raise
    return dest
