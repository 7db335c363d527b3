"""What a toolchain provider would download for an offer (``Provider.fetches``), as data: so that
``srcbuild mirror create`` gathers exactly the files a build on the other machine fetches, asking
each provider rather than knowing them all.
"""

from __future__ import annotations

from srcbuild.records import record
from srcbuild.toolchain.facts import DebianRoute
from srcbuild.toolchain.index_files import IndexFile


@record
class Download:
    """One file from a URL, with the sha256 and size the data records."""

    url: str
    sha256: str
    size: int | None
    why: str  # "CUDA 9.2 (runfile)"


@record
class GitSource:
    """A git repository at a tag (NCCL built from source)."""

    url: str
    tag: str
    why: str


@record
class CondaPiece:
    """A toolchain piece the ``conda`` provider installs: its channel and match specs."""

    channel: str
    specs: tuple[str, ...]
    why: str  # "gcc 7 (conda)"


@record
class Fetches:
    """What one offer's provider fetches."""

    downloads: tuple[Download, ...] = ()
    repos: tuple[GitSource, ...] = ()
    index: tuple[IndexFile, ...] = ()  # wheels of the package index (sha256-pinned)
    debian: tuple[DebianRoute, ...] = ()  # Debian packages apt fetches
    conda: tuple[CondaPiece, ...] = ()
