"""The Debian route's packages in a mirror: ``DIR/debian/``, an apt repository apt itself checks.

On the connected machine, apt (``toolchain.providers.apt.PrivateApt``, the archive this machine's
apt uses) reads the suite's signed ``InRelease``, then ``apt-get download --print-uris`` names each
package's pool path and sha256, and ``apt-get download`` fetches them (apt checks each against the
signed index). The mirror keeps what apt needs to check them again on the other machine::

    debian/dists/<suite>/InRelease                      the archive's own, signature and all
    debian/dists/<suite>/<component>/binary-<arch>/Packages.xz
                                                        fetched from the archive, checked against
                                                        the sha256 InRelease states for it
    debian/pool/<component>/<...>.deb                   at the path the Packages file names

With ``--mirror-dir`` the Debian provider's private apt reads ``file://DIR/debian`` (or the HTTP
URL) instead of the archive: apt verifies the InRelease signature with the same keyring, the
Packages files against it and every .deb against them, as it does from the archive.
"""

from __future__ import annotations

import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from srcbuild import proc
from srcbuild.errors import HostError, NotFoundError
from srcbuild.files import sha256_file
from srcbuild.mirror.layout import DEBIAN
from srcbuild.mirror.manifest import Entry
from srcbuild.toolchain.facts import DebianRoute
from srcbuild.toolchain.providers.apt import PrivateApt

TIMEOUT = 60.0
_URI = re.compile(r"^'([^']+)' (\S+) (\d+) SHA256:([0-9a-f]{64})$")


def release_sha256(text: str) -> dict[str, tuple[str, int]]:
    """The ``SHA256:`` section of a Release/InRelease file: path -> (sha256, size)."""
    out: dict[str, tuple[str, int]] = {}
    inside = False
    for line in text.splitlines():
        if not line.startswith(" "):
            inside = line.strip() == "SHA256:"
            continue
        fields = line.split()
        if inside and len(fields) == 3 and fields[1].isdigit():
            out[fields[2]] = (fields[0], int(fields[1]))
    return out


def parse_print_uris(text: str) -> list[tuple[str, str, int, str]]:
    """``apt-get download --print-uris`` lines: (URL, file name, size, sha256)."""
    out = []
    for line in text.splitlines():
        match = _URI.match(line.strip())
        if match:
            out.append((match.group(1), match.group(2), int(match.group(3)), match.group(4)))
    return out


def _run(apt_argv: list[str], what: str, log_path: Path | None, environ: Mapping[str, str], cwd: Path | None = None
         ) -> proc.RunResult:
    try:
        result = proc.run(apt_argv, cwd=cwd, env=environ, log_path=log_path)
    except FileNotFoundError:
        raise HostError(f"{what}: apt-get is not installed", "make the mirror on a Debian or Ubuntu machine") from None
    if not result.ok:
        last = next((line.strip() for line in reversed(result.tail) if line.strip()), "no output")
        raise NotFoundError(f"{what} failed (exit {result.returncode}): {last}", "check this machine's apt mirror")
    return result


def _fetch(url: str, dest: Path) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "srcbuild"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response, open(dest, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError) as exc:
        raise NotFoundError(f"download failed: {url}: {getattr(exc, 'reason', exc)}", "check the apt mirror") from None


def mirror_debian(
    root: Path,
    route: DebianRoute,
    archive: str,
    scratch: Path,
    environ: Mapping[str, str],
    arch: str = "amd64",
    log_path: Path | None = None,
    echo: IO[str] | None = None,
) -> dict[str, Entry]:
    """Put the route's packages and the index files that check them under ``root/debian``."""
    if scratch.exists():
        shutil.rmtree(scratch)
    apt = PrivateApt(scratch / "apt", archive, route.suite, route.components, route.keyring)
    apt.prepare()
    if echo is not None:
        print(f"  apt: {' '.join(route.all_packages)} from Debian {route.suite}", file=echo, flush=True)
    _run(apt.update_argv(), "apt-get update (private sources list)", log_path, environ)
    listed = _run([*apt.download_argv(route.all_packages), "--print-uris"], "apt-get download --print-uris", log_path,
                  environ)
    lists = scratch / "apt" / "lists"
    in_release = next(iter(sorted(lists.glob(f"*_dists_{route.suite}_InRelease"))), None)
    if in_release is None:
        raise NotFoundError(f"apt-get update left no InRelease of {route.suite}", "check this machine's apt mirror")
    base = archive.rstrip("/") + "/"
    added: dict[str, Entry] = {}
    top = f"{DEBIAN}/dists/{route.suite}"
    target = root / top / "InRelease"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(in_release, target)
    origin = base + f"dists/{route.suite}/InRelease"
    added[f"{top}/InRelease"] = Entry(sha256_file(target), target.stat().st_size, origin)
    hashes = release_sha256(in_release.read_text(encoding="utf-8", errors="replace"))
    for component in route.components:
        rel = f"{component}/binary-{arch}/Packages.xz"
        if rel not in hashes:
            continue  # a component without packages for this architecture
        want, size = hashes[rel]
        target = root / top / rel
        kept = target.is_file() and target.stat().st_size == size and sha256_file(target) == want
        if not kept:
            target.parent.mkdir(parents=True, exist_ok=True)
            part = target.with_name(target.name + ".part")
            _fetch(base + f"dists/{route.suite}/{rel}", part)
            if sha256_file(part) != want:
                part.unlink()
                raise NotFoundError(
                    f"{base}dists/{route.suite}/{rel}: its sha256 differs from the one InRelease states",
                    "the archive is being updated: run the same command again later",
                )
            part.replace(target)
        added[f"{top}/{rel}"] = Entry(want, size, base + f"dists/{route.suite}/{rel}")
    debs = scratch / "debs"
    debs.mkdir(parents=True)
    rows = parse_print_uris("\n".join(listed.tail))
    missing = [(url, name, size, sha) for url, name, size, sha in rows if not _have(root, base, url, sha)]
    if missing:
        _run(apt.download_argv(route.all_packages), "apt-get download", log_path, environ, cwd=debs)
    for url, name, size, sha in rows:
        rel = _pool_path(base, url)
        target = root / rel
        if (url, name, size, sha) in missing:
            got = debs / name
            if not got.is_file() or sha256_file(got) != sha:
                raise NotFoundError(f"apt-get download left no {name} with sha256 {sha}", "check the apt mirror")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(got), target)
        added[rel] = Entry(sha, size, url)
    shutil.rmtree(scratch, ignore_errors=True)
    return added


def _pool_path(base: str, url: str) -> str:
    if not url.startswith(base):
        raise NotFoundError(f"{url}: not under the archive {base}", "check this machine's apt mirror")
    return f"{DEBIAN}/" + urllib.parse.unquote(url[len(base):])


def _have(root: Path, base: str, url: str, sha: str) -> bool:
    path = root / _pool_path(base, url)
    return path.is_file() and sha256_file(path) == sha
