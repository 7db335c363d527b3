"""Where an extension's source comes from: a requirement on the package index, or a git URL.

``parse_requirement("torch-scatter==2.1.2")`` and ``parse_requirement("git+https://host/x.git@v1")``
make an ``ExtRequest``. An index request is resolved to one sdist by ``find_sdist``: the simple
page (PEP 503; PEP 691's JSON where the index serves it) of each index pip is configured with
(``pip_indexes``: ``index-url`` from ``pip config list`` or ``PIP_INDEX_URL``, else pip's own
default read from pip, then the extra indexes), the newest version the specifier allows that has
an sdist, and that file's sha256 from the link's ``#sha256=`` fragment (an sdist without one is
refused: nothing unverified is compiled). The download itself is ``toolchain.download.Downloader``'s
(resumable, sha256-checked). A git request names a tag or a 40-hex commit; the commit a tag
resolves to is recorded when the sources are fetched.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild import proc
from srcbuild.errors import HostError, NotFoundError, UsageError
from srcbuild.ext.knowledge import normalize
from srcbuild.records import record
from srcbuild.simple_page import page_files

SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2", ".tgz")
_HEX40 = re.compile(r"[0-9a-f]{40}\Z")
TIMEOUT = 60.0


@record
class ExtRequest:
    """What the user asked to build."""

    name: str  # normalized project name ("torch-scatter"); a git request: the repository's name
    specifier: str = ""  # "==2.1.2", "" for the newest
    git_url: str | None = None  # the repository (without the @ref)
    git_ref: str | None = None  # a tag or a 40-hex commit

    @property
    def is_git(self) -> bool:
        return self.git_url is not None

    def __str__(self) -> str:
        if self.git_url:
            return f"git+{self.git_url}@{self.git_ref}"
        return f"{self.name}{self.specifier}"


@record
class Sdist:
    """One sdist on an index: the file pip would fetch, and its sha256."""

    name: str
    version: str
    filename: str
    url: str
    sha256: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "filename": self.filename, "url": self.url,
                "sha256": self.sha256}


def parse_requirement(text: str) -> ExtRequest:
    """``NAME[==VERSION]`` (any PEP 508 version specifier) or ``[git+]URL@TAG_OR_COMMIT``."""
    text = text.strip()
    if "://" in text or text.startswith("git@"):
        url = text[4:] if text.startswith("git+") else text
        base, sep, ref = url.rpartition("@")
        if not sep or "/" in ref or not ref or ("://" not in base and not base.startswith("git@")):
            raise UsageError(
                f"{text}: a git source needs a tag or a commit after '@'",
                f"write it as git+{url.split('@')[0]}@TAG (or @COMMIT, 40 hex digits)",
            )
        name = base.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        return ExtRequest(name=normalize(name), git_url=base, git_ref=ref)
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(
            f"{text}: not a package requirement ({exc})", "write NAME or NAME==VERSION, e.g. torch-scatter==2.1.2"
        ) from None
    if req.url or req.extras or req.marker:
        raise UsageError(f"{text}: extras, markers and URLs are not taken here", "write NAME or NAME==VERSION")
    return ExtRequest(name=normalize(req.name), specifier=str(req.specifier))


def is_commit(ref: str) -> bool:
    return bool(_HEX40.match(ref))


def _pip_default_index(python: str) -> str | None:
    """pip's own default index (``pip._internal.models.index.PyPI.simple_url``), read from pip."""
    out = proc.probe(
        [python, "-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"], timeout=60
    )
    return out.strip().splitlines()[-1] if out and out.strip() else None


def parse_pip_config(listing: str) -> dict[str, str]:
    """``pip config list`` lines (``global.index-url='URL'``) as {key: value}; later scopes win."""
    values: dict[str, str] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.split(".", 1)[-1]] = value.strip().strip("'\"")
    return values


def _pip_config(python: str, environ: Mapping[str, str]) -> dict[str, str]:
    listing = proc.probe([python, "-m", "pip", "config", "list"], env=environ, timeout=60) or ""
    return parse_pip_config(listing)


def pip_indexes(python: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The indexes pip is configured with: the main index, then the extra ones (see the module docstring)."""
    return pip_locations(python, environ)[0]


def pip_locations(python: str, environ: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(indexes, find-links locations) pip is configured with, from one reading of its configuration:
    the indexes as ``pip_indexes`` gives them; the ``find-links`` locations from ``PIP_FIND_LINKS``,
    else pip's configuration."""
    values = _pip_config(python, environ)
    main = environ.get("PIP_INDEX_URL") or values.get("index-url") or _pip_default_index(python)
    extras = (environ.get("PIP_EXTRA_INDEX_URL") or values.get("extra-index-url", "")).split()
    given = environ.get("PIP_FIND_LINKS")
    find_links = (values.get("find-links", "") if given is None else given).split()
    return tuple(u for u in (main, *extras) if u), tuple(find_links)


def find_links_files(locations: Sequence[str]) -> list[tuple[str, str]]:
    """(file name, URL) of every file the ``find-links`` locations hold: a directory's files (a
    local path or ``file://``), a page's links (``http(s)://``); one that cannot be read is passed over."""
    out: list[tuple[str, str]] = []
    for location in locations:
        if "://" in location and not location.startswith("file://"):
            out += _page_listing(location)
            continue
        path = Path(urllib.parse.unquote(urllib.parse.urlsplit(location).path) if "://" in location else location)
        try:
            files = sorted(path.iterdir()) if path.is_dir() else [path] if path.is_file() else []
        except OSError:
            continue
        out += [(f.name, f.resolve().as_uri()) for f in files if f.is_file()]
    return out


def sdist_version(project: str, filename: str) -> str | None:
    """The version of ``project``'s sdist ``filename`` (``torch_scatter-2.1.2.tar.gz`` -> "2.1.2")."""
    for suffix in SDIST_SUFFIXES:
        if filename.endswith(suffix):
            stem = filename[: -len(suffix)]
            name, sep, version = stem.rpartition("-")
            if sep and normalize(name) == project:
                return version
    return None


def pick_sdist(project: str, specifier: str, files: Sequence[tuple[str, str]]) -> Sdist | None:
    """The newest sdist ``specifier`` allows (pre-releases only when it names one)."""
    spec = SpecifierSet(specifier)
    best: tuple[Version, str, str] | None = None
    for filename, url in files:
        text = sdist_version(project, filename)
        if text is None:
            continue
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not spec.contains(version, prereleases=bool(specifier) and version.is_prerelease):
            continue
        if best is None or version > best[0]:
            best = (version, filename, url)
    if best is None:
        return None
    version, filename, url = best
    base, _, fragment = url.partition("#")
    digest = dict(urllib.parse.parse_qsl(fragment)).get("sha256", "")
    return Sdist(project, str(version), filename, base, digest)


def _read_page(url: str) -> tuple[str, str] | None:
    if url.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
        for name in ("index.html", ""):
            try:
                with open(path.rstrip("/") + ("/" + name if name else ""), encoding="utf-8") as handle:
                    return handle.read(), "text/html"
            except OSError:
                continue
        return None
    request = urllib.request.Request(
        url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.read().decode("utf-8", "replace"), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    except (OSError, ValueError):
        raise


def index_files(project: str, indexes: Sequence[str]) -> list[tuple[str, str]]:
    """(file name, URL) of every file ``project``'s pages list on the indexes that answer."""
    return [f for index in indexes for f in _page_listing(index.rstrip("/") + f"/{normalize(project)}/")]


def _page_listing(page_url: str) -> list[tuple[str, str]]:
    """(file name, URL) of every file a simple page lists; none when it cannot be read or is missing."""
    try:
        page = _read_page(page_url)
    except (OSError, ValueError):
        return []
    return page_files(page_url, *page) if page is not None else []


def find_sdist(request: ExtRequest, indexes: Sequence[str]) -> Sdist:
    """The sdist of ``request`` on the first index that has one; NotFoundError otherwise."""
    if not indexes:
        raise HostError(
            "no package index: pip has none configured and pip's default could not be read",
            "set one with `python -m pip config set global.index-url URL` or PIP_INDEX_URL",
        )
    unreachable: list[str] = []
    for index in indexes:
        page_url = index.rstrip("/") + f"/{request.name}/"
        try:
            page = _read_page(page_url)
        except (OSError, ValueError) as exc:
            unreachable.append(f"{index} ({getattr(exc, 'reason', exc)})")
            continue
        if page is None:
            continue
        found = pick_sdist(request.name, request.specifier, page_files(page_url, *page))
        if found is None:
            continue
        if not found.sha256:
            raise NotFoundError(
                f"{found.filename} on {index}: the index states no sha256 for it, so it is not compiled",
                "use an index that publishes #sha256= links (PEP 503), or a git source with a commit",
            )
        return found
    where = ", ".join(indexes)
    if unreachable and len(unreachable) == len(indexes):
        raise NotFoundError(
            f"no package index could be reached for {request}: {'; '.join(unreachable)}",
            "check the network or pip's index (python -m pip config list)",
        )
    raise NotFoundError(
        f"no sdist of {request} on the configured indexes ({where})",
        f"check the name and version (python -m pip index versions {request.name}), "
        "or build from git: srcbuild ext git+URL@TAG --recipe R",
    )
