"""Reading srcbuild's sourced data tables (``srcbuild/knowledge/data/*.toml``): a leaf every package may use.

A table is a TOML file whose rows carry a ``source``; a ``[sources]`` table names long citations
once, and ``read_table`` expands those short names in every ``source`` string. The typed rows are
made by ``srcbuild.knowledge.load``; ``srcbuild.capability`` reads ``capabilities.toml`` through
this module without importing the knowledge package.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

DATA_DIR = Path(__file__).resolve().parent / "knowledge" / "data"


def read_table(name: str, data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """One data file, with the short source names of its ``[sources]`` table expanded in every ``source``."""
    path = data_dir / f"{name}.toml"
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    names = data.pop("sources", {})
    if names:
        pattern = re.compile(
            r"(?<![\w/.-])(" + "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True)) + r")(?![\w-])"
        )
        _expand_sources(data, lambda text: pattern.sub(lambda m: names[m.group(1)], text))
    return data


def _expand_sources(node: Any, expand: Callable[[str], str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "source" and isinstance(value, str):
                node[key] = expand(value)
            else:
                _expand_sources(value, expand)
    elif isinstance(node, list):
        for item in node:
            _expand_sources(item, expand)
