"""Build environments: the spec a recipe needs, lockfiles, and the backends that make them.

Public API (used by the planner and the build step)::

    spec = env_spec_for(recipe, kb=None, channels_override=None, channel_alias=None, channel_mirrors=())
    backend = choose_backend(name, spec)          # conda | mamba | micromamba | rattler | venv
    backend.describe(spec, prefix, lockfile)      # lines for `srcbuild plan`
    env = backend.ensure(spec, envs_dir, lockfile, log_path, CommandIO(environ, echo))   # -> BuildEnv
    existing_env(prefix)                          # --env PREFIX
    default_lockfile(recipe)                      # recipes/R.conda-lock.yml when it exists
    env_prefix(spec, envs_dir, backend)           # where ensure() puts (or finds) the environment
    env_prefixes(spec, envs_dir)                  # both possible places (conda-style, venv)
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srcbuild.envs.backends import BACKEND_NAMES, EnvBackend, choose_backend
    from srcbuild.envs.channels import ChannelRouting, routing_from
    from srcbuild.envs.lockfile import LockedPackage, Lockfile, lockfile_path, read_lockfile
    from srcbuild.envs.prefix import BuildEnv, EnvStore, existing_env
    from srcbuild.envs.spec import EnvSpec, env_spec_for

# name -> the submodule that defines it, imported on first use: a module of this package that
# needs none of the backends (``envs.runtime``, which doctor uses to list this machine's
# Pythons) does not load them, nor the HTTP client, the file lock and the solver they import
_LAZY = {
    "BACKEND_NAMES": "backends",
    "EnvBackend": "backends",
    "choose_backend": "backends",
    "ChannelRouting": "channels",
    "routing_from": "channels",
    "LockedPackage": "lockfile",
    "Lockfile": "lockfile",
    "lockfile_path": "lockfile",
    "read_lockfile": "lockfile",
    "BuildEnv": "prefix",
    "EnvStore": "prefix",
    "existing_env": "prefix",
    "EnvSpec": "spec",
    "env_spec_for": "spec",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"srcbuild.envs.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BACKEND_NAMES",
    "BuildEnv",
    "ChannelRouting",
    "EnvBackend",
    "EnvSpec",
    "EnvStore",
    "LockedPackage",
    "Lockfile",
    "choose_backend",
    "default_lockfile",
    "env_prefix",
    "env_prefixes",
    "env_spec_for",
    "existing_env",
    "lockfile_path",
    "read_lockfile",
    "routing_from",
]


def default_lockfile(recipe: Any) -> Path | None:
    """``recipes/R.conda-lock.yml`` next to the recipe file, if it exists."""
    from srcbuild.envs.lockfile import lockfile_path

    if getattr(recipe, "path", None) is None:
        return None
    path = lockfile_path(Path(recipe.path), recipe.name)
    return path if path.is_file() else None


def env_prefix(spec: EnvSpec, envs_dir: Path, backend: EnvBackend | None) -> Path:
    """The directory ``backend.ensure`` creates or reuses for ``spec`` (a conda backend's when None)."""
    if backend is not None and not backend.conda_packages:
        return Path(envs_dir) / ("venv-" + spec.as_pip_only().key)
    return Path(envs_dir) / spec.key


def env_prefixes(spec: EnvSpec, envs_dir: Path) -> tuple[Path, Path]:
    """Both places an environment for ``spec`` can be: made by a conda backend, or as a venv."""
    return Path(envs_dir) / spec.key, Path(envs_dir) / ("venv-" + spec.as_pip_only().key)
