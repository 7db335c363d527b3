"""Every default location srcbuild uses, in one object that tests redirect.

Precedence for each directory: command line > environment variable > default. The catalog and
the patches come from the checkout when srcbuild runs from one, otherwise from the copies that
ship inside the installed package (``srcbuild/_data``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from srcbuild.precedence import env_value
from srcbuild.records import record

PACKAGE_DIR = Path(__file__).resolve().parent


def checkout_root() -> Path | None:
    """The source checkout srcbuild runs from, or None for an installed copy."""
    root = PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file() and (root / "recipes").is_dir():
        return root
    return None


def _data_dir(name: str) -> Path:
    root = checkout_root()
    if root is not None:
        return root / name
    return PACKAGE_DIR / "_data" / name


def catalog_dir() -> Path:
    """The built-in recipe catalog (``recipes/``)."""
    return _data_dir("recipes")


def patches_dir() -> Path:
    """The built-in patch collection (``patches/``)."""
    return _data_dir("patches")


def default_cache_dir() -> Path:
    """``cache/`` of a checkout, otherwise the user cache directory."""
    root = checkout_root()
    if root is not None:
        return root / "cache"
    return Path(platformdirs.user_cache_dir("srcbuild")) / "wheels"


def default_config_dir(environ: Mapping[str, str]) -> Path:
    """Where the user's srcbuild settings live (the trusted signers, the signing key)."""
    return Path(env_value(environ, "SRCBUILD_CONFIG_DIR") or platformdirs.user_config_dir("srcbuild")).expanduser()


def default_work_dir() -> Path:
    """Where sources, build trees, environments and logs go."""
    return Path(platformdirs.user_cache_dir("srcbuild")) / "work"


def _split(paths: str | None) -> list[str]:
    return [p for p in (paths or "").split(os.pathsep) if p]


@record
class Paths:
    """The directories one srcbuild invocation uses."""

    work_dir: Path
    cache_dir: Path
    recipe_dirs: tuple[Path, ...]
    patches_dirs: tuple[Path, ...]
    toolchains: Path | None = None  # SRCBUILD_TOOLCHAIN_DIR; None: <work_dir>/toolchains

    @classmethod
    def resolve(
        cls,
        work_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        *,
        environ: Mapping[str, str],
    ) -> Paths:
        """Resolve from explicit arguments, then ``SRCBUILD_*`` variables, then defaults."""
        work = work_dir or env_value(environ, "SRCBUILD_WORK_DIR") or default_work_dir()
        cache = cache_dir or env_value(environ, "SRCBUILD_CACHE_DIR") or default_cache_dir()
        extra = tuple(Path(p) for p in _split(env_value(environ, "SRCBUILD_RECIPES_PATH")))
        extra_patches = tuple(Path(p) for p in _split(env_value(environ, "SRCBUILD_PATCHES_PATH")))
        toolchains = env_value(environ, "SRCBUILD_TOOLCHAIN_DIR")
        return cls(
            work_dir=Path(work).expanduser().resolve(),
            cache_dir=Path(cache).expanduser().resolve(),
            recipe_dirs=(*extra, catalog_dir()),
            patches_dirs=(*extra_patches, patches_dir()),
            toolchains=Path(toolchains).expanduser().resolve() if toolchains else None,
        )

    @property
    def sources_dir(self) -> Path:
        return self.work_dir / "src"

    @property
    def git_cache_dir(self) -> Path:
        """Shared git object store: a second tag fetches only what is new."""
        return self.work_dir / "git-objects"

    @property
    def envs_dir(self) -> Path:
        return self.work_dir / "envs"

    @property
    def logs_dir(self) -> Path:
        return self.work_dir / "logs"

    @property
    def builds_dir(self) -> Path:
        return self.work_dir / "builds"

    @property
    def toolchain_dir(self) -> Path:
        """Provisioned toolkits and compilers, shared by every recipe (``SRCBUILD_TOOLCHAIN_DIR``)."""
        return self.toolchains if self.toolchains is not None else self.work_dir / "toolchains"
