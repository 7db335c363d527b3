"""The configuration file: ``srcbuild.toml`` in the user config directory, or ``--config FILE``.

It holds defaults for the settings that are environment variables otherwise, so that a machine
(or a team) writes them once::

    work_dir = "/scratch/srcbuild"            # SRCBUILD_WORK_DIR
    cache_dir = "~/wheels"                    # SRCBUILD_CACHE_DIR
    mirrors = ["gitee"]                       # SRCBUILD_MIRROR
    remotes = ["s3://team-wheels/srcbuild"]   # SRCBUILD_REMOTES
    nvidia_mirror = "https://mirror.example.org/nvidia/"   # SRCBUILD_NVIDIA_MIRROR
    compiler_cache = "sccache"                # SRCBUILD_COMPILER_CACHE (ccache, sccache or none)
    compiler_cache_url = "redis://cache.lab:6379"   # SRCBUILD_COMPILER_CACHE_URL
    dist_scheduler = "http://scheduler.lab:10600"   # SRCBUILD_DIST_SCHEDULER
    portable = true                           # SRCBUILD_PORTABLE (manylinux wheels, docs/cache.md)
    env_backend = "rattler"                   # SRCBUILD_ENV_BACKEND
    recipes_path = ["~/my-recipes"]           # SRCBUILD_RECIPES_PATH
    toolchain_dir = "/opt/srcbuild-toolchains"   # SRCBUILD_TOOLCHAIN_DIR
    mirror_dir = "/srv/srcbuild-mirror"       # SRCBUILD_MIRROR_DIR (a path or an http:// URL)
    toolchain_providers = ["debian", "redist"]   # SRCBUILD_TOOLCHAIN_PROVIDERS
    s3_endpoint_url = "http://minio.lab:9000"     # SRCBUILD_S3_ENDPOINT_URL

Every key is a setting of ``srcbuild.settings`` (its ``key``); ``srcbuild config show`` lists them.

Precedence, for each setting: command line > environment variable > this file > default. The file
is read once, by the command line, and its values become the environment defaults of this run
(``apply``; ``main`` restores the environment afterwards), so every module keeps reading the one
mapping it is given. ``SRCBUILD_CONFIG_SOURCES`` records which variables came from which file,
for ``origin`` to say so (``srcbuild plan`` prints each setting with its origin).
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import field
from pathlib import Path

from srcbuild.errors import UsageError
from srcbuild.records import record
from srcbuild.settings import SETTINGS

FILE_NAME = "srcbuild.toml"
SOURCES_VAR = "SRCBUILD_CONFIG_SOURCES"
CONFIG_VAR = "SRCBUILD_CONFIG"

# key -> (environment variable, kind): the settings ``srcbuild.settings`` gives a key; kind "path",
# "paths" (joined with os.pathsep), "list" (joined with ","), "str" or "bool" (written as 1/0)
KEYS: dict[str, tuple[str, str]] = {s.key: (s.var, s.kind) for s in SETTINGS if s.key}


def default_config_path() -> Path:
    import platformdirs  # here: the settings are read by every command, the file's path by few

    return Path(platformdirs.user_config_dir("srcbuild")) / FILE_NAME


@record
class ConfigFile:
    """The settings one file gives, as environment variables (name -> value)."""

    path: Path | None
    variables: dict[str, str] = field(default_factory=dict)


def _value(key: str, kind: str, raw: object, where: str) -> str:
    def wrong(expected: str) -> UsageError:
        example = {"bool": "true", "list": '["gitee"]', "paths": '["~/my-recipes"]'}.get(kind, '"..."')
        return UsageError(f"{where}: {key} must be {expected}, not {raw!r}", f"write it like: {key} = {example}")

    if kind == "bool":
        if not isinstance(raw, bool):
            raise wrong("true or false")
        return "1" if raw else "0"
    if kind in ("list", "paths"):
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise wrong("a string or an array of strings")
        if kind == "paths":
            return os.pathsep.join(str(Path(i).expanduser()) for i in items)
        return ",".join(items)
    if not isinstance(raw, str) or not raw:
        raise wrong("a non-empty string")
    return str(Path(raw).expanduser()) if kind == "path" else raw


def parse_config(text: str, where: str) -> dict[str, str]:
    """The variables a config file's text sets; ``UsageError`` naming the file and key otherwise."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on older interpreters only
        import tomli as tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"{where}: invalid TOML: {exc}", f"fix the file, or move it aside: mv {where} {where}.bak"
        ) from None
    variables: dict[str, str] = {}
    for key, raw in data.items():
        if key not in KEYS:
            close = difflib.get_close_matches(key, list(KEYS), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(KEYS)}"
            raise UsageError(f"{where}: unknown key {key!r}", hint)
        var, kind = KEYS[key]
        variables[var] = _value(key, kind, raw, where)
    return variables


def load_config(explicit: str | None, environ: Mapping[str, str]) -> ConfigFile:
    """``--config FILE`` (must exist), else ``SRCBUILD_CONFIG``, else the user's file when present."""
    chosen = explicit or environ.get(CONFIG_VAR) or None
    path = Path(chosen).expanduser() if chosen else default_config_path()
    if not path.is_file():
        if chosen:
            raise UsageError(f"--config {chosen}: no such file", f"create it, e.g. with: touch {chosen}")
        return ConfigFile(None)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}", f"check the file's permissions: ls -l {path}") from None
    return ConfigFile(path, parse_config(text, str(path)))


def apply(config: ConfigFile, environ: MutableMapping[str, str]) -> None:
    """Set each variable the file gives and ``environ`` lacks; record them in ``SOURCES_VAR``."""
    taken = [var for var in config.variables if not environ.get(var)]
    for var in taken:
        environ[var] = config.variables[var]
    if taken and config.path is not None:
        environ[SOURCES_VAR] = f"{config.path}\n" + " ".join(taken)


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def env_bool(environ: Mapping[str, str], name: str) -> bool | None:
    """The one yes/no reading of a variable: None when unset; a UsageError when it is neither."""
    raw = environ.get(name)
    if raw is None:
        return None
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise UsageError(f"{name}={raw!r} is not a yes/no value", f"set {name}=1 or {name}=0")


def origin(environ: Mapping[str, str], var: str) -> str:
    """Where ``var``'s value came from: ``config file PATH (key)`` or ``environment VAR``."""
    sources = environ.get(SOURCES_VAR, "")
    if "\n" in sources:
        path, names = sources.split("\n", 1)
        if var in names.split():
            key = next(k for k, (v, _) in KEYS.items() if v == var)
            return f"config file {path} ({key})"
    return f"environment {var}"


@contextmanager
def configured(explicit: str | None, environ: MutableMapping[str, str]) -> Iterator[ConfigFile]:
    """Apply the config file to ``environ`` (the command line passes the process environment, then
    reads it once) for the duration of one command."""
    before = {var: environ.get(var) for var in (*(v for v, _ in KEYS.values()), SOURCES_VAR)}
    try:
        config = load_config(explicit, environ)
        apply(config, environ)
        yield config
    finally:
        for var, value in before.items():
            if value is None:
                environ.pop(var, None)
            else:
                environ[var] = value
