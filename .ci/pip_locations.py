#!/usr/bin/env python3
"""The local directories pip's configuration on this machine names as places to find packages.

.ci/stock-root copies pip's configuration into the fresh root (the files below and the PIP_*
variables); an index or find-links location that is a directory of this machine would then be
missing there. This prints, one per line, each such directory that exists here: the find-links
directories and the directories of file:// indexes (index-url, extra-index-url), with, for an
index, the directories outside it that its pages link to (a simple index's pages commonly link to
../../files/NAME.whl). .ci/stock-root bind-mounts each of them read-only at the same path.

pip's configuration files, in pip's order (pip's documentation, "Configuration"): the global
/etc/xdg/pip/pip.conf and /etc/pip.conf, the user's ~/.pip/pip.conf and ~/.config/pip/pip.conf,
then PIP_CONFIG_FILE; PIP_FIND_LINKS, PIP_INDEX_URL and PIP_EXTRA_INDEX_URL override them. Every
section is read (a [install] or [download] value names a location as much as [global]'s).
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

KEYS = ("find-links", "index-url", "extra-index-url")
HREF = re.compile(rb"""href\s*=\s*["']([^"'#?]+)""", re.IGNORECASE)


def config_files() -> list[Path]:
    home = Path.home()
    files = [
        Path("/etc/xdg/pip/pip.conf"),
        Path("/etc/pip.conf"),
        home / ".pip/pip.conf",
        home / ".config/pip/pip.conf",
    ]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    return files


def values() -> list[tuple[str, str]]:
    """(key, location) for every location the configuration names."""
    found = []
    for path in config_files():
        if not path.is_file():
            continue
        parser = configparser.RawConfigParser()
        parser.read(path)
        for section in parser.sections():
            for key in KEYS:
                if parser.has_option(section, key):
                    found += [(key, v) for v in parser.get(section, key).split()]
    for key in KEYS:
        found += [(key, v) for v in os.environ.get("PIP_" + key.upper().replace("-", "_"), "").split()]
    return found


def local_dir(location: str) -> Path | None:
    """The directory of this machine a location names, or None (a remote URL, a missing path)."""
    if location.startswith("file:"):
        path = Path(unquote(urlsplit(location).path))
    elif "://" in location:
        return None
    else:
        path = Path(location)
    if not path.is_absolute():
        return None
    return path if path.is_dir() else (path.parent if path.is_file() else None)


def linked_dirs(index: Path) -> set[Path]:
    """Directories outside a file:// index that its pages' relative links point into."""
    outside = set()
    for page in index.rglob("*.html"):
        for href in HREF.findall(page.read_bytes()):
            link = unquote(href.decode("utf-8", "replace"))
            if "://" in link or link.startswith("/"):
                continue
            target = Path(os.path.normpath(page.parent / link))
            if not target.is_relative_to(index) and target.exists():
                outside.add(target.parent if target.is_file() else target)
    return outside


def main() -> int:
    dirs: list[Path] = []
    for key, location in values():
        path = local_dir(location)
        if path is None:
            continue
        more = sorted(linked_dirs(path)) if key != "find-links" else []
        for d in [path, *more]:
            if d not in dirs:
                dirs.append(d)
    # a directory inside another one listed is mounted with it
    for d in dirs:
        if not any(d != other and d.is_relative_to(other) for other in dirs):
            print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
