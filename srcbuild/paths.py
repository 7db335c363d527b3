"""Every default location srcbuild uses, in one object that tests redirect.

Precedence for each directory: command line > environment variable (or the config file) >
default, decided by ``srcbuild.precedence`` and remembered with its origin (``Paths.origin``,
which ``srcbuild config show`` prints). The catalog and the patches come from the checkout when
srcbuild runs from one, otherwise from the copies that ship inside the installed package
(``srcbuild/_data``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

import platformdirs

from srcbuild.precedence import Chosen, env_value, from_cli, from_env, precedence
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


def config_dir_choice(environ: Mapping[str, str]) -> Chosen[Path]:
    """Where the user's srcbuild settings live (the trusted signers, the signing key), and why."""
    chosen = from_env(environ, "SRCBUILD_CONFIG_DIR", Path) or Chosen(
        Path(platformdirs.user_config_dir("srcbuild")), "default"
    )
    return Chosen(chosen.value.expanduser(), chosen.origin)


def default_config_dir(environ: Mapping[str, str]) -> Path:
    """Where the user's srcbuild settings live (the trusted signers, the signing key)."""
    return config_dir_choice(environ).value


def default_work_dir() -> Path:
    """Where sources, build trees, environments and logs go."""
    return Path(platformdirs.user_cache_dir("srcbuild")) / "work"


def _given(value: str | Path | None) -> Path | None:
    """A command-line directory (an empty one is none given)."""
    return Path(value) if value else None


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
    # where each directory came from ("command line --work-dir", "environment SRCBUILD_CACHE_DIR",
    # "config file PATH (cache_dir)", "default"), by its variable
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @classmethod
    def resolve(
        cls,
        work_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        *,
        environ: Mapping[str, str],
    ) -> Paths:
        """Resolve from explicit arguments (``--work-dir``, ``--cache-dir``), then ``SRCBUILD_*``
        variables (the config file's among them), then defaults, each with its origin."""
        work = precedence(Chosen(default_work_dir(), "default"), from_env(environ, "SRCBUILD_WORK_DIR", Path),
                          from_cli(_given(work_dir), "--work-dir"))
        cache = precedence(Chosen(default_cache_dir(), "default"), from_env(environ, "SRCBUILD_CACHE_DIR", Path),
                           from_cli(_given(cache_dir), "--cache-dir"))
        toolchains = from_env(environ, "SRCBUILD_TOOLCHAIN_DIR", Path)
        extra = tuple(Path(p) for p in _split(env_value(environ, "SRCBUILD_RECIPES_PATH")))
        extra_patches = tuple(Path(p) for p in _split(env_value(environ, "SRCBUILD_PATCHES_PATH")))
        return cls(
            work_dir=work.value.expanduser().resolve(),
            cache_dir=cache.value.expanduser().resolve(),
            recipe_dirs=(*extra, catalog_dir()),
            patches_dirs=(*extra_patches, patches_dir()),
            toolchains=toolchains.value.expanduser().resolve() if toolchains else None,
            origins=(("SRCBUILD_WORK_DIR", work.origin), ("SRCBUILD_CACHE_DIR", cache.origin),
                     ("SRCBUILD_TOOLCHAIN_DIR", toolchains.origin if toolchains else "default")),
        )

    def origin(self, var: str) -> str:
        """Where the directory of setting ``var`` came from ("default" when not recorded)."""
        return dict(self.origins).get(var, "default")

    def chosen(self, var: str) -> Chosen[Path]:
        """The directory of setting ``var`` (WORK_DIR, CACHE_DIR, TOOLCHAIN_DIR) with its origin."""
        value = {"SRCBUILD_WORK_DIR": self.work_dir, "SRCBUILD_CACHE_DIR": self.cache_dir,
                 "SRCBUILD_TOOLCHAIN_DIR": self.toolchain_dir}[var]
        return Chosen(value, self.origin(var))

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
