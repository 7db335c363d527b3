"""Reading the toolchain data: each registered provider reads its own file (``Provider.data_file``,
``Provider.read_data``), from the built-in ``toolchain/data/`` and the directories
``SRCBUILD_TOOLCHAIN_DATA`` names (their rows first), and the parts are merged into one
``ToolchainFacts``. This module knows no provider's table.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from srcbuild.errors import UsageError
from srcbuild.precedence import env_value
from srcbuild.tables import read_data_file
from srcbuild.toolchain.facts import DATA_DIR, DATA_VAR, ToolchainFacts
from srcbuild.toolchain.providers import PROVIDERS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def read_file(directory: Path, name: str) -> dict[str, Any]:
    """One data file's tables (``{}`` when the directory has no such file)."""
    path = directory / name
    if not path.is_file():
        return {}
    try:
        return read_data_file(path, shipped=directory == DATA_DIR)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: cannot read toolchain data: {exc}", f"fix or remove {path}") from None


def parse_dir(directory: Path) -> ToolchainFacts:
    """The rows of one data directory: each provider's from its own file (absent files give nothing)."""
    parts = []
    for provider in PROVIDERS.values():
        data = read_file(directory, provider.data_file)
        if data:
            parts.append(provider.read_data(data))
    return merge(parts)


def merge(parts: Sequence[ToolchainFacts]) -> ToolchainFacts:
    """Rows of earlier parts first; of a single value (conda's gcc, MAGMA, an MPI flavour), the
    first part's that has one; ``rows`` per provider, earlier parts' first."""
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(ToolchainFacts):
        given = [getattr(p, spec.name) for p in parts]
        if spec.name == "rows":
            rows: dict[str, tuple[Any, ...]] = {}
            for part_rows in given:
                for name, found in part_rows.items():
                    rows[name] = (*rows.get(name, ()), *found)
            values[spec.name] = rows
        elif isinstance(getattr(ToolchainFacts(), spec.name), tuple):
            values[spec.name] = tuple(row for value in given for row in value)
        elif isinstance(getattr(ToolchainFacts(), spec.name), Mapping):
            merged: dict[str, Any] = {}
            for value in reversed(given):
                merged.update(value)
            values[spec.name] = merged
        else:
            values[spec.name] = next((v for v in given if v is not None), None)
    return ToolchainFacts(**values)


def load_facts(environ: Mapping[str, str]) -> ToolchainFacts:
    extra = [Path(p) for p in (env_value(environ, DATA_VAR) or "").split(os.pathsep) if p]
    return merge([*(parse_dir(d) for d in extra), parse_dir(DATA_DIR)])
