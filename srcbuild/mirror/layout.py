"""Where each piece lives in a mirror directory, and the settings that make a command use it.

A mirror directory (``srcbuild mirror create DIR``) is plain files, so it works after a copy (rsync,
a USB disk) and when any static HTTP server serves it::

    DIR/manifest.json                       every file: sha256, size, origin; the recipes it serves
    DIR/git/<host>/<path>                   bare repositories, one per URL a recipe or a .gitmodules
                                            names (https://github.com/pytorch/pytorch ->
                                            git/github.com/pytorch/pytorch), with only the pinned
                                            tags and the commits submodules need, and the files of
                                            git's "dumb" HTTP protocol (git update-server-info)
    DIR/nvidia/<path>                       NVIDIA's downloads at their paths on NVIDIA's site
    DIR/patches/<name>                      the recipes' patches, by the names recipes give them
    DIR/conda/<channel>/<subdir>/           the build environment's conda packages and the toolchain's
                                            (gcc, MPI, MAGMA), with repodata.json
    DIR/pypi/simple/<project>/              a PEP 503 index: the build environment's pip packages,
                                            NVIDIA's wheels the toolchain takes, extensions' sdists
    DIR/debian/                             an apt repository: the archive's signed InRelease, the
                                            Packages files apt checks against it, the .debs in pool/

``mirror_dir_settings`` turns a mirror directory (a path or an ``http(s)://`` URL) into the
settings every other piece already reads: git mirror rules (``SRCBUILD_MIRROR``), the mirror of
NVIDIA's site (``SRCBUILD_NVIDIA_MIRROR``), the conda channel alias (``SRCBUILD_CHANNEL_ALIAS``,
every channel mirror cleared), pip's index (``PIP_INDEX_URL``, with pip's configuration files,
extra indexes and find-links dropped for the command), the Debian archive
(``SRCBUILD_DEBIAN_MIRROR``) and the patch path. Pure: it reads nothing.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from srcbuild.offline import DEBIAN_VAR, DIR_VAR

MANIFEST = "manifest.json"
GIT = "git"
NVIDIA = "nvidia"
PATCHES = "patches"
CONDA = "conda"
PYPI = "pypi"
DEBIAN = "debian"

# The prefixes a --mirror-dir maps onto DIR/git/: every spelling of a remote URL but git@HOST:
# (scp-like), which takes one rule per host (the hosts the manifest lists).
SCHEME_PREFIXES = ("https://", "http://", "git://", "ssh://git@", "ssh://")
_SCP = re.compile(r"^(?:[^@/:]+@)?([^/:]+):(?!//)(.+)$")


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def base_of(location: str) -> str:
    """The mirror's base with a trailing slash: the URL as given, or an absolute path."""
    if is_url(location):
        return location if location.endswith("/") else location + "/"
    if location.startswith("file://"):
        location = urllib.parse.unquote(urllib.parse.urlparse(location).path)
    return str(Path(location).expanduser().absolute()) + "/"


def file_url(base: str) -> str:
    """``base`` as a URL urllib opens: ``file://`` for a local directory."""
    return base if is_url(base) else Path(base).as_uri() + "/"


def _clean(path: str) -> str | None:
    parts = [p for p in PurePosixPath(path).parts if p not in ("/", "")]
    if not parts or any(p in (".", "..") for p in parts):
        return None
    return "/".join(parts)


def git_path(url: str) -> str | None:
    """Where the bare repository of ``url`` lives under DIR, or None for a URL srcbuild does not
    mirror (a local path, a remote helper): ``https://github.com/pytorch/pytorch`` ->
    ``git/github.com/pytorch/pytorch``, ``git@github.com:pybind/pybind11.git`` ->
    ``git/github.com/pybind/pybind11.git``."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("https", "http", "git", "ssh") and parsed.hostname:
        rest = _clean(parsed.path)
        return f"{GIT}/{parsed.hostname}/{rest}" if rest else None
    scp = _SCP.match(url)
    if scp and "::" not in url:
        rest = _clean(scp.group(2))
        return f"{GIT}/{scp.group(1)}/{rest}" if rest else None
    return None


def git_host(url: str) -> str | None:
    path = git_path(url)
    return path.split("/")[1] if path else None


def nvidia_path(url: str, nvidia_hosts: Iterable[str]) -> str | None:
    """Where a download from NVIDIA's site lives under DIR (``nvidia/<its path>``), else None."""
    parsed = urllib.parse.urlparse(url)
    if parsed.hostname not in tuple(nvidia_hosts):
        return None
    rest = _clean(parsed.path)
    return f"{NVIDIA}/{rest}" if rest else None


def git_rules(base: str, hosts: Iterable[str]) -> str:
    """``SRCBUILD_MIRROR`` for a mirror directory: every remote spelling onto ``DIR/git/``."""
    root = base + GIT + "/"
    rules = [f"{prefix}={root}" for prefix in SCHEME_PREFIXES]
    rules += [f"git@{host}:={root}{host}/" for host in sorted(set(hosts))]
    return " ".join(rules)


def mirror_dir_settings(location: str, hosts: Iterable[str]) -> dict[str, str]:
    """The variables that make a command take every download from the mirror at ``location``."""
    base = base_of(location)
    out = {
        DIR_VAR: base,
        "SRCBUILD_MIRROR": git_rules(base, hosts),
        "SRCBUILD_NVIDIA_MIRROR": file_url(base) + NVIDIA + "/",
        "SRCBUILD_CHANNEL_ALIAS": file_url(base) + CONDA,
        "SRCBUILD_CHANNEL_MIRRORS": "",
        # pip: the mirror's index and nothing else (no configuration file, extra index or find-links)
        "PIP_INDEX_URL": file_url(base) + PYPI + "/simple/",
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
        "PIP_NO_INDEX": "0",
        "PIP_CONFIG_FILE": os.devnull,
        DEBIAN_VAR: file_url(base) + DEBIAN,
    }
    return out
