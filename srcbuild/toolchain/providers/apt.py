"""A private apt configuration: Debian packages fetched without touching the system's apt state.

``configured_mirror`` reads the mirror this machine's apt already uses (deb822 ``.sources`` files
first, then one-line ``sources.list`` entries; security archives skipped), so no host is written
into srcbuild. ``PrivateApt`` keeps its sources list, lists and archives under one directory of
srcbuild's and passes them to ``apt-get`` with ``-o Dir::...``: ``/etc/apt`` is read, never changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from srcbuild.records import record

APT_ROOT = Path("/etc/apt")


def _deb822_uris(text: str) -> list[str]:
    return [u for line in text.splitlines() if line.startswith("URIs:") for u in line.split()[1:]]


def _one_line_uris(text: str) -> list[str]:
    """The archive URL of each ``deb`` line (the first word that is a URL: options come before it)."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("deb "):
            out.extend([word for word in line.split()[1:] if re.match(r"^[a-z+]+://", word)][:1])
    return out


def mirror_from(sources: Iterable[tuple[str, str]]) -> str | None:
    """The first non-security archive URL in (file name, text) pairs of apt source files."""
    uris: list[str] = []
    for name, text in sources:
        found = _deb822_uris(text) if name.endswith(".sources") else []
        for line_uri in _one_line_uris(text) if name.endswith(".list") else []:
            found.append(line_uri)
        uris.extend(found)
    return next((u for u in uris if "security" not in u), None)


def configured_mirror(apt_root: Path = APT_ROOT) -> str | None:
    """The Debian mirror this machine's apt is configured with, or None."""
    files = sorted((apt_root / "sources.list.d").glob("*.sources")) if (apt_root / "sources.list.d").is_dir() else []
    files += [apt_root / "sources.list"]
    files += sorted((apt_root / "sources.list.d").glob("*.list")) if (apt_root / "sources.list.d").is_dir() else []
    pairs = []
    for path in files:
        try:
            pairs.append((path.name, path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return mirror_from(pairs)


def mirror_options(root: Path) -> tuple[str, ...]:
    """apt's options for a mirror directory's snapshot of an archive (``srcbuild mirror create``):
    only the Packages.xz files it holds (no by-hash paths, translations or the system's extra
    index targets from apt.conf.d), and no expiry date on the snapshot; the InRelease signature,
    the Packages files and every .deb are still checked."""
    return (
        "-o", f"Dir::Etc::Parts={root / 'etc' / 'none'}",
        "-o", "Acquire::By-Hash=no",
        "-o", "Acquire::Languages=none",
        "-o", "Acquire::GzipIndexes=false",
        "-o", "Acquire::CompressionTypes::Order::=xz",
        "-o", "Acquire::Check-Valid-Until=false",
    )


@record
class PrivateApt:
    """apt-get with its sources, lists and cache all under ``root``."""

    root: Path
    mirror: str
    suite: str
    components: Sequence[str]
    keyring: str
    extra: tuple[str, ...] = ()  # more -o options (a mirror directory's: see MIRROR_OPTIONS)

    @property
    def sources_line(self) -> str:
        signed = f"[signed-by={self.keyring}] " if self.keyring else ""
        return f"deb {signed}{self.mirror} {self.suite} {' '.join(self.components)}\n"

    def prepare(self) -> None:
        for sub in ("etc/none", "lists/partial", "cache/archives/partial"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "etc" / "sources.list").write_text(self.sources_line, encoding="utf-8")

    def options(self) -> list[str]:
        out: list[str] = []
        for key, value in (
            ("Dir::Etc::SourceList", self.root / "etc" / "sources.list"),
            ("Dir::Etc::SourceParts", self.root / "etc" / "none"),
            ("Dir::State::Lists", self.root / "lists"),
            ("Dir::Cache", self.root / "cache"),
        ):
            out += ["-o", f"{key}={value}"]
        return [*out, *self.extra]

    def update_argv(self) -> list[str]:
        return ["apt-get", *self.options(), "-qq", "update"]

    def download_argv(self, packages: Sequence[str]) -> list[str]:
        return ["apt-get", *self.options(), "-qq", "download", *packages]
