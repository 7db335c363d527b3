"""The settings that send every download to a mirror directory (``--mirror-dir``), and how a
download reports what the mirror lacked.

A leaf: the packages that download (envs, toolchain, sources, ext, container) read these without
importing ``srcbuild.mirror``, which creates mirrors and sits above them.
``srcbuild.mirror.layout.mirror_dir_settings`` sets the variables from a mirror directory.
"""

from __future__ import annotations

from collections.abc import Sequence

DIR_VAR = "SRCBUILD_MIRROR_DIR"  # the mirror directory (a path or an http(s):// URL) every download comes from
DEBIAN_VAR = "SRCBUILD_DEBIAN_MIRROR"  # the Debian archive in it


def missing_requirement(tail: Sequence[str]) -> str | None:
    """The requirement pip names in "No matching distribution found for X", if it does."""
    marker = "No matching distribution found for "
    for line in reversed(tail):
        if marker in line:
            return line.split(marker, 1)[1].strip()
    return None
