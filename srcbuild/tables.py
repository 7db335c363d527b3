"""Reading srcbuild's sourced data tables (``srcbuild/knowledge/data/*.toml``): a leaf every package may use.

A table is a TOML file whose rows carry a ``source``; a ``[sources]`` table names long citations
once, and ``read_table`` expands those short names in every ``source`` string. The typed rows are
made by ``srcbuild.knowledge.load``; ``srcbuild.capability`` reads ``capabilities.toml`` through
this module without importing the knowledge package.

Parsing the tables' 120 KB of TOML takes about 50 ms, on every command that judges anything
(``doctor``, ``plan``, a build); so, as Python does with ``.pyc`` files, each parsed and expanded
table shipped with srcbuild is kept as JSON (``tables/`` in the user's cache directory, one file
per installation and table), stamped with the TOML file's size and modification time, and read
instead while they match. A stamp that differs, or a cache file that does not parse, means the
TOML is parsed again; a cache directory that cannot be written means no cache. Nothing is kept
inside the installed package, so uninstalling it leaves nothing behind there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

DATA_DIR = Path(__file__).resolve().parent / "knowledge" / "data"


CACHE_FORMAT = 1


def read_table(name: str, data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """One data file, with the short source names of its ``[sources]`` table expanded in every ``source``."""
    return _read_kept(data_dir / f"{name}.toml", data_dir == DATA_DIR, _with_sources)  # shipped, not a test's


def read_data_file(path: Path, shipped: bool) -> dict[str, Any]:
    """A TOML data file as ``tomllib`` parses it; a file srcbuild ships (``shipped``) is kept parsed
    in the user's cache as ``read_table`` keeps its tables (a site's or a test's own file is not)."""
    return _read_kept(path, shipped, lambda data: data)


def _read_kept(path: Path, keep: bool, finish: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """``finish`` of the parsed file, from the cache while it matches the file (``keep``), else parsed."""
    with path.open("rb") as fh:
        stamp = _stamp(os.fstat(fh.fileno()))
        cache = _cache_file(path) if keep else None
        cached = _cached(cache, stamp) if cache is not None else None
        if cached is not None:
            return cached
        data = finish(tomllib.load(fh))
    if cache is not None:
        _keep(cache, stamp, data)
    return data


def _with_sources(data: dict[str, Any]) -> dict[str, Any]:
    names = data.pop("sources", {})
    if names:
        pattern = re.compile(
            r"(?<![\w/.-])(" + "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True)) + r")(?![\w-])"
        )
        _expand_sources(data, lambda text: pattern.sub(lambda m: names[m.group(1)], text))
    return data


def _cache_file(path: Path) -> Path:
    import platformdirs  # loaded by every command that resolves a path anyway

    return Path(platformdirs.user_cache_dir("srcbuild")) / "tables" / f"{path.stem}-{_dir_key(path.parent)}.json"


@lru_cache(maxsize=64)
def _dir_key(directory: Path) -> str:
    """The part of a kept table's name that tells its data directory: resolved and hashed once per
    directory, not for each of the files read from it (a doctor reads about thirty)."""
    return hashlib.sha256(str(directory.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _stamp(st: os.stat_result) -> list[int]:
    return [CACHE_FORMAT, st.st_size, st.st_mtime_ns]


def _cached(cache: Path, stamp: list[int]) -> dict[str, Any] | None:
    """The table kept in ``cache`` when it was made from the TOML file as it is now, else None."""
    try:
        kept = json.loads(cache.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("stamp") != stamp or not isinstance(kept.get("table"), dict):
        return None
    table: dict[str, Any] = kept["table"]
    return table


def _keep(cache: Path, stamp: list[int], data: dict[str, Any]) -> None:
    """Write the parsed table beside the data, whole or not at all; nothing when it cannot be written
    (a read-only install) or holds what JSON cannot (a TOML date)."""
    try:
        text = json.dumps({"stamp": stamp, "table": data})
    except (TypeError, ValueError):
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{cache.name}.", dir=cache.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, cache)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _expand_sources(node: Any, expand: Callable[[str], str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("source", "targets") and isinstance(value, str):
                node[key] = expand(value)
            else:
                _expand_sources(value, expand)
    elif isinstance(node, list):
        for item in node:
            _expand_sources(item, expand)
