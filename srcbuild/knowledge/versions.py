"""Version arithmetic for toolchain pins: ``"11.4.1"``, ``"3.8"``, ``"v1.7.1"``, ``"470.82.01"``.

Recipes pin versions at varying precision (``cuda = "11.4"`` means some 11.4.x), so bounds follow one
convention throughout the knowledge base: a lower bound pads with zeros (``>= 11.4`` holds for 11.4.0),
an upper bound covers everything under it (``<= 3.8`` holds for 3.8.10; ``<= 11.4.0`` does not hold
for 11.4.1). PEP 440 specifiers (``packaging``) are used only where the data writes them (``torch``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

_NUMERIC = re.compile(r"^v?(\d+(?:\.\d+)*)")

VersionTuple = tuple[int, ...]


@lru_cache(maxsize=4096)  # doctor judges every recipe against every table: the same few strings, thousands of times
def parse(text: str) -> VersionTuple:
    """``"11.4.1"`` -> ``(11, 4, 1)``; a leading ``v`` and trailing text (``-rc1``) are ignored."""
    m = _NUMERIC.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a version number")
    return tuple(int(part) for part in m.group(1).split("."))


def try_parse(text: str | None) -> VersionTuple | None:
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError:
        return None


def show(version: VersionTuple) -> str:
    return ".".join(str(part) for part in version)


def at_least(version: VersionTuple, floor: VersionTuple) -> bool:
    """``version >= floor``, missing parts counting as zero."""
    width = max(len(version), len(floor))
    return _pad(version, width) >= _pad(floor, width)


def at_most(version: VersionTuple, ceiling: VersionTuple) -> bool:
    """``version <= ceiling`` where the ceiling covers every release under it (3.8 covers 3.8.10)."""
    return version[: len(ceiling)] <= ceiling


def line(version: VersionTuple, parts: int = 2) -> VersionTuple:
    """The release line: ``(11, 4, 1)`` -> ``(11, 4)``."""
    return version[:parts]


@lru_cache(maxsize=4096)
def matches(spec: str, version: str) -> bool:
    """Whether ``version`` satisfies a PEP 440 specifier such as ``">=1.7,<2"`` (memoised: the
    rules ask the same few pairs hundreds of times while ``srcbuild doctor`` judges the catalog)."""
    try:
        return Version(show(parse(version))) in SpecifierSet(spec)
    except (InvalidSpecifier, InvalidVersion, ValueError):
        return False


def _pad(version: VersionTuple, width: int) -> VersionTuple:
    return version + (0,) * (width - len(version))
