"""Lockfiles in the conda-lock v1 format: exact package URLs and hashes for one environment spec.

``srcbuild lock --recipe R`` writes ``recipes/R.conda-lock.yml``. The file is a plain conda-lock v1
document (``version: 1``; ``metadata`` with ``content_hash`` per platform, ``channels``, ``platforms``,
``sources``; a ``package`` list of ``name``, ``version``, ``manager``, ``platform``, ``dependencies``,
``url``, ``hash`` {md5, sha256}, ``category``, ``optional``), so conda-lock itself can render or install it.
``content_hash`` is the environment spec's hash (``EnvSpec.hash()``): a lockfile whose hash no longer
matches the recipe's spec is refused. URLs are canonical (the channel's default address), and are
routed through mirrors when installed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from srcbuild.errors import EnvironmentError_
from srcbuild.files import write_atomic
from srcbuild.recipe.load import display_path
from srcbuild.records import record

LOCK_SUFFIX = ".conda-lock.yml"


@record
class LockedPackage:
    """One package pinned to an exact file."""

    name: str
    version: str
    url: str
    sha256: str
    md5: str
    dependencies: tuple[str, ...] = ()  # match specs, e.g. "libgreet >=1.0,<2"
    platform: str = "linux-64"
    manager: str = "conda"

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def label(self) -> str:
        """``libgreet 1.0 (libgreet-1.0-h0_0.tar.bz2)``: how errors name the package."""
        return f"{self.name} {self.version} ({self.file_name})"

    def to_yaml(self) -> dict[str, Any]:
        deps: dict[str, str] = {}
        for spec in self.dependencies:
            name, _, constraint = spec.strip().partition(" ")
            deps[name] = constraint.strip() or "*"
        return {
            "name": self.name,
            "version": self.version,
            "manager": self.manager,
            "platform": self.platform,
            "dependencies": deps,
            "url": self.url,
            "hash": {"md5": self.md5, "sha256": self.sha256},
            "category": "main",
            "optional": False,
        }


@record
class Lockfile:
    content_hash: str
    channels: tuple[str, ...]
    packages: tuple[LockedPackage, ...]
    platform: str = "linux-64"
    sources: tuple[str, ...] = ()

    def to_yaml(self) -> dict[str, Any]:
        return {
            "version": 1,
            "metadata": {
                "content_hash": {self.platform: self.content_hash},
                "channels": [{"url": c, "used_env_vars": []} for c in self.channels],
                "platforms": [self.platform],
                "sources": list(self.sources),
            },
            "package": [p.to_yaml() for p in sorted(self.packages, key=lambda p: p.name)],
        }

    def write(self, path: Path) -> None:
        text = "# Written by `srcbuild lock`; do not edit. Re-run it when the recipe's environment changes.\n"
        import yaml  # read only when a lock file is written or read

        text += yaml.safe_dump(self.to_yaml(), sort_keys=False, default_flow_style=False)
        write_atomic(path, text)

    def explicit_lines(self, url_for: Any = None) -> list[str]:
        """An ``@EXPLICIT`` list (``url#md5``) for ``conda/mamba/micromamba create --file``."""
        route = url_for or (lambda u: u)
        return ["@EXPLICIT", *(f"{route(p.url)}#{p.md5}" for p in self.packages)]


def packages_digest(packages: Sequence[LockedPackage]) -> str:
    """One hash for an exact package set (file name and sha256, or md5, of each package)."""
    lines = sorted(f"{p.file_name} {p.sha256 or p.md5}" for p in packages)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def lockfile_path(recipe_path: Path, recipe_name: str) -> Path:
    """``recipes/R.toml`` -> ``recipes/R.conda-lock.yml``."""
    return recipe_path.parent / f"{recipe_name}{LOCK_SUFFIX}"


def _bad(path: Path, what: str) -> EnvironmentError_:
    return EnvironmentError_(
        f"{display_path(path)}: {what}",
        "regenerate it with `srcbuild lock --recipe <recipe>` (or delete it to solve at build time)",
    )


def read_lockfile(path: Path) -> Lockfile:
    """Parse a conda-lock v1 file; anything malformed is an error naming the file and the field."""
    import yaml  # read only when a lock file is written or read

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise _bad(path, f"cannot be read as YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or data.get("version") != 1:
        raise _bad(path, "is not a conda-lock version 1 file (`version: 1` missing)")
    meta = data.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("content_hash"), dict):
        raise _bad(path, "has no metadata.content_hash")
    platforms = meta.get("platforms") or ["linux-64"]
    platform = str(platforms[0])
    content_hash = meta["content_hash"].get(platform)
    if not content_hash:
        raise _bad(path, f"has no metadata.content_hash for {platform}")
    channels = tuple(str(c["url"]) if isinstance(c, dict) else str(c) for c in meta.get("channels") or ())
    packages = []
    for index, entry in enumerate(data.get("package") or ()):
        where = f"package[{index}]"
        try:
            if entry.get("manager", "conda") != "conda" or entry.get("platform", platform) != platform:
                continue
            hashes = entry["hash"]
            deps = entry.get("dependencies") or {}
            packages.append(
                LockedPackage(
                    name=str(entry["name"]),
                    version=str(entry["version"]),
                    url=str(entry["url"]),
                    sha256=str(hashes["sha256"]),
                    md5=str(hashes["md5"]),
                    dependencies=tuple(f"{k} {v}".strip() if v != "*" else k for k, v in deps.items()),
                    platform=platform,
                )
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise _bad(path, f"{where} lacks {exc}") from None
    return Lockfile(
        content_hash=str(content_hash),
        channels=channels,
        packages=tuple(packages),
        platform=platform,
        sources=tuple(str(s) for s in meta.get("sources") or ()),
    )


def check_current(lock: Lockfile, path: Path, spec_hash: str, recipe_name: str | None = None) -> None:
    """Refuse a lockfile written for another version of the environment spec."""
    if lock.content_hash != spec_hash:
        name = recipe_name or "<recipe>"
        raise EnvironmentError_(
            f"{display_path(path)} is out of date: it was locked for environment {lock.content_hash[:16]}, "
            f"but the recipe now needs {spec_hash[:16]}",
            f"re-run `srcbuild lock --recipe {name}` to lock the current environment (or delete the lockfile)",
        )


def lockfile_from(
    packages: Sequence[LockedPackage], spec_hash: str, channels: Sequence[str], sources: Sequence[str] = ()
) -> Lockfile:
    return Lockfile(content_hash=spec_hash, channels=tuple(channels), packages=tuple(packages), sources=tuple(sources))
