"""The recipe format: every table, key and value check, as data.

Each key maps to a ``Field``: the TOML type it must have, an optional check of its value that
returns a reason when the value is wrong, and a description (used by README's reference).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path

from srcbuild.capability import ComputeCapability
from srcbuild.records import record
from srcbuild.tables import read_data_file

Check = Callable[[object], "str | None"]

# Every pattern is matched whole (fullmatch: "$" would also accept a value ending in a newline) and
# with ASCII digits only ("\d" also matches "١" and "３", which int() and version parsers then read).
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
PYTHON_RE = re.compile(r"3\.[0-9]{1,2}")
GCC_RE = re.compile(r"[0-9]{1,2}(\.[0-9]+){0,2}")
CUDA_RE = re.compile(r"[0-9]{1,2}\.[0-9](\.[0-9]+)?")
CUDNN_RE = re.compile(r"[0-9]{1,2}\.[0-9]+(\.[0-9]+){0,2}")
MPI_VERSION_RE = re.compile(r"[0-9]+(\.[0-9]+){0,2}")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MPI_IMPLEMENTATIONS = ("openmpi", "mpich", "mvapich2", "intel-mpi")


@record
class Field:
    kind: type | tuple[type, ...]
    description: str
    check: Check | None = None
    item_kind: type | None = None  # for lists: the type of each item
    item_check: Check | None = None


def _matches(regex: re.Pattern[str], expected: str) -> Check:
    def check(value: object) -> str | None:
        if not regex.fullmatch(str(value)):
            return f"{value!r} is not {expected}"
        return None

    return check


def _tag(value: object) -> str | None:
    """A name git accepts as a tag (git-check-ref-format: no space, ~ ^ : ? * [ \\, "..", "@{")."""
    text = str(value)
    bad = not text or text.startswith(("-", "/", ".")) or text.endswith((".", "/", ".lock"))
    if bad or any(c.isspace() or c in "~^:?*[\\" for c in text) or ".." in text or "@{" in text:
        return f"{value!r} is not a git tag name"
    return None


def _repo(value: object) -> str | None:
    text = str(value)
    if re.fullmatch(r"(https?|ssh|git|file)://\S+", text) or re.fullmatch(r"git@[\w.-]+:\S+", text, re.ASCII):
        return None
    if text.startswith("/") and not any(c.isspace() for c in text):
        return None
    return f"{value!r} is not a git URL (https://..., git@host:path, file://... or an absolute path)"


def _cuda(value: object) -> str | None:
    if value == "none" or CUDA_RE.fullmatch(str(value)):
        return None
    return f'{value!r} is not a CUDA version (expected a form like "11.8" or "none" for a CPU-only build)'


def _cudnn(value: object) -> str | None:
    if value == "none" or CUDNN_RE.fullmatch(str(value)):
        return None
    return f'{value!r} is not a cuDNN version like "7.6" or "8.0.5" (or "none": no cuDNN)'


def _capability(value: object) -> str | None:
    try:
        ComputeCapability.parse(str(value))
    except ValueError as exc:
        return str(exc)
    return None


def _implementation(value: object) -> str | None:
    if value in MPI_IMPLEMENTATIONS:
        return None
    return f"{value!r} is not a known MPI implementation ({', '.join(MPI_IMPLEMENTATIONS)})"


def _env_table(value: object) -> str | None:
    assert isinstance(value, dict)
    for key, item in value.items():
        if not ENV_NAME_RE.fullmatch(key):
            return f"{key!r} is not an environment variable name"
        if not isinstance(item, str):
            return f'{key} = {item!r} must be a string (write {key} = "{item}")'
    return None


# [build] env is an allowlist, written out in data/build_env.toml with a source for each name:
# the switches torch's, torchvision's and the extensions' setup.py document. A name outside it
# (PATH, LD_PRELOAD, CC, NVCC_FLAGS, every CMake variable that is not listed ...) may be set only
# with [build] allow_env_override = true, and plan and every build then name it. A listed name
# takes only its kind of value (an on/off switch, a count, a plain word), so no value can be a
# program, a path or a flag.
BUILD_ENV_DATA = Path(__file__).resolve().parent / "data" / "build_env.toml"
_SWITCH_VALUES = frozenset({"0", "1", "ON", "OFF", "TRUE", "FALSE", "YES", "NO"})
_VALUE_KINDS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "switch": ("an on/off switch (0, 1, ON, OFF, TRUE, FALSE, YES, NO)", lambda v: v.upper() in _SWITCH_VALUES),
    "count": ("a whole number", lambda v: v.isascii() and v.isdigit()),
    "word": (
        "a plain word (letters, digits and . _ ; + -)",
        lambda v: re.fullmatch(r"[A-Za-z0-9._;+\-]+", v, re.ASCII) is not None,
    ),
}


@record
class BuildEnvAllowlist:
    """The names ``[build] env`` takes without ``allow_env_override`` and the value kind of each."""

    names: Mapping[str, str]  # exact name -> value kind
    switch_prefixes: tuple[str, ...]  # NAME with one of these prefixes takes a switch value

    def kind(self, name: str) -> str | None:
        """The value kind ``name`` takes, or None when it is not on the list."""
        if name in self.names:
            return self.names[name]
        if re.fullmatch(r"[A-Z][A-Z0-9_]*", name) and any(
            name.startswith(p) and len(name) > len(p) for p in self.switch_prefixes
        ):
            return "switch"
        return None

    def value_reason(self, name: str, value: str) -> str | None:
        """Why ``value`` is not what listed ``name`` takes; None when it is (or ``name`` is not listed)."""
        kind = self.kind(name)
        if kind is None:
            return None
        what, ok = _VALUE_KINDS[kind]
        return None if ok(value) else f"{name} takes {what}, not {value!r}"


@lru_cache(maxsize=1)
def build_env_allowlist() -> BuildEnvAllowlist:
    """data/build_env.toml, read once."""
    data = read_data_file(BUILD_ENV_DATA, shipped=True)
    names: dict[str, str] = {}
    for group in data.get("names", []):
        if group["kind"] not in _VALUE_KINDS or not group.get("source"):
            raise ValueError(f"{BUILD_ENV_DATA}: every [[names]] needs a known kind and a source")
        names.update(dict.fromkeys(group["names"], group["kind"]))
    prefixes = tuple(p for group in data.get("switches", []) for p in group["prefixes"])
    return BuildEnvAllowlist(names=names, switch_prefixes=prefixes)


def is_build_variable(name: str) -> bool:
    """Whether ``name`` is on the ``[build] env`` allowlist (data/build_env.toml)."""
    return build_env_allowlist().kind(name) is not None


def changes_what_runs(name: str, value: str | None = None) -> bool:
    """True for a variable off the allowlist, or a listed one given a value its kind does not take:
    it may change which programs run or what they load."""
    allow = build_env_allowlist()
    if allow.kind(name) is None:
        return True
    return value is not None and allow.value_reason(name, value) is not None


def override_note(name: str, value: str) -> str:
    """What a plan prints beside a ``[build] env`` variable off the allowlist (empty for a switch)."""
    if not changes_what_runs(name, value):
        return ""
    return ", allowed by allow_env_override = true: not a build switch"


def _compiler_cache(value: object) -> str | None:
    kinds = ("sccache", "ccache", "none")
    return None if value in kinds else f"{value!r} must be one of: {', '.join(kinds)}"


def _patch_path(value: object) -> str | None:
    text = str(value)
    if text.startswith("/") or ".." in text.split("/"):
        return f"{value!r} must be a path relative to a patches directory, without '..'"
    if not text.endswith((".patch", ".diff")):
        return f"{value!r} is not a patch file (expected a name ending in .patch or .diff)"
    return None


EXTENSION_KEYS = {
    "name": "the extension's package name on the index (torch-scatter), required",
    "version": "its exact version (2.1.2); absent: the newest sdist",
    "git": "a git source instead of the index: URL@TAG or URL@COMMIT",
}
EXTENSION_NAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
EXTENSION_VERSION_RE = re.compile(r"[0-9][A-Za-z0-9.+!_-]*")


def _extension(value: object) -> str | None:
    """One ``[[extensions]]`` table: name (required), version or git."""
    assert isinstance(value, dict)
    for key in value:
        if key not in EXTENSION_KEYS:
            close = [k for k in EXTENSION_KEYS if k[:2] == str(key)[:2]]
            return f"{key!r}: unknown key" + (f" (did you mean {close[0]!r}?)" if close else "")
    for key, item in value.items():
        if not isinstance(item, str):
            return f'{key} = {item!r} must be a string (write {key} = "{item}")'
    if "name" not in value:
        return "name: required key is missing"
    if not EXTENSION_NAME_RE.fullmatch(value["name"]):
        return f"name {value['name']!r} is not a package name"
    if "version" in value and not EXTENSION_VERSION_RE.fullmatch(value["version"]):
        return f"version {value['version']!r} is not a version like \"2.1.2\""
    if "version" in value and "git" in value:
        return "version and git name two sources; keep one"
    git = value.get("git", "")
    if git and ("@" not in git.split("/")[-1] or _repo(git.rsplit("@", 1)[0])):
        return f"git {git!r} is not URL@TAG or URL@COMMIT"
    return None


NAME_MAX = 100  # a recipe name becomes a file name (<name>.toml) and directory names


def recipe_name_reason(value: object) -> str | None:
    """Why ``value`` is not a recipe name, or None."""
    text = str(value)
    if len(text) > NAME_MAX:
        return f"{text[:20]!r}... is not a recipe name (longer than {NAME_MAX} characters)"
    if NAME_RE.fullmatch(text):
        return None
    return f"{value!r} is not a recipe name (lowercase letters, digits, '.', '_' and '-')"


def control_character(value: object) -> str | None:
    """The first control character (newline, NUL, DEL, a line separator ...) anywhere in a TOML
    value, its keys included, spelt ``U+000A``; None when there is none.

    No recipe value is more than one line of text, and each ends up in a command line, a file
    name, a log or the shell plan, where a newline or NUL would start something else.
    """
    if isinstance(value, str):
        if value.isascii() and value.isprintable():  # no ASCII control character, no separator (most values)
            return None
        for c in value:
            if unicodedata.category(c) in ("Cc", "Zl", "Zp"):
                return f"U+{ord(c):04X}"
        return None
    if isinstance(value, dict):
        items: list[object] = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        items = list(value)
    else:
        return None
    for item in items:
        found = control_character(item)
        if found:
            return found
    return None


SOURCE_TABLE = {
    "tag": Field(str, 'git tag to build, e.g. "v1.7.1"', _tag),
    "commit": Field(str, "40-hex commit the tag must resolve to (optional)", _matches(COMMIT_RE, "a 40-hex commit")),
    "repo": Field(str, "git URL of the repository", _repo),
}

# the keys of a recipe besides the package tables (``recipe_schema`` adds those)
SCHEMA: dict[str, Field | dict[str, Field]] = {
    "name": Field(str, "recipe name; defaults to the file name", recipe_name_reason),
    "description": Field(str, "one line: which GPUs this serves"),
    "extends": Field(str, "name of a parent recipe; tables merge key by key, this file wins", recipe_name_reason),
    "toolchain": {
        "python": Field(str, 'Python major.minor, e.g. "3.8"', _matches(PYTHON_RE, 'a Python version like "3.8"')),
        "gcc": Field(str, 'gcc major (or major.minor), e.g. "7"', _matches(GCC_RE, 'a gcc version like "7" or "11.2"')),
        "cuda": Field(str, 'CUDA version, e.g. "9.2", or "none" for a CPU-only build', _cuda),
        "cudnn": Field(
            str,
            'cuDNN version, e.g. "7.6" (absent or "none": build without cuDNN, also one the parent names)',
            _cudnn,
        ),
    },
    "gpu": {
        "arch": Field(
            list, 'compute capabilities, e.g. ["3.0"] -> TORCH_CUDA_ARCH_LIST', item_kind=str, item_check=_capability
        ),
        "ptx": Field(bool, "also embed PTX for the highest capability"),
    },
    "mpi": {
        "enabled": Field(bool, "build the MPI backend of torch.distributed"),
        "implementation": Field(str, f"one of {', '.join(MPI_IMPLEMENTATIONS)}", _implementation),
        "version": Field(str, 'MPI version, e.g. "4.0"', _matches(MPI_VERSION_RE, 'a version like "4.0"')),
    },
    "build": {
        "env": Field(dict, "extra build variables (strings), recorded in the plan", _env_table),
        "patches": Field(list, "patch files, relative to patches/", item_kind=str, item_check=_patch_path),
        "allow_env_override": Field(
            bool, "let env set variables that change what runs (PATH, LD_PRELOAD, PYTHONPATH, ...); warned about"
        ),
        "compiler_cache": Field(str, "compiler launcher: sccache, ccache or none", _compiler_cache),
        "portable": Field(bool, "build against conda-forge's glibc 2.17 sysroot and tag the wheel manylinux"),
    },
    "env": {
        "conda": Field(list, "extra conda packages (match specs)", item_kind=str),
        "channels": Field(list, "conda channels, highest priority first", item_kind=str),
        "pip": Field(list, "extra pip requirements", item_kind=str),
    },
    "extensions": Field(
        list,
        "PyTorch extensions srcbuild ext --all builds: [[extensions]] name, version or git",
        item_kind=dict,
        item_check=_extension,
    ),
}



def recipe_schema() -> dict[str, Field | dict[str, Field]]:
    """The whole schema: ``SCHEMA`` and a pin table (``SOURCE_TABLE``) for each registered package
    (``srcbuild.packages.PACKAGES``: ``[torch]``, ``[torchvision]``, ``[torchaudio]``), asked each time
    so a package added to the registry is a recipe table at once."""
    from srcbuild.packages import PACKAGES

    head = ("name", "description", "extends")
    tables: dict[str, Field | dict[str, Field]] = {spec.recipe_table: SOURCE_TABLE for spec in PACKAGES.values()}
    return {**{key: SCHEMA[key] for key in head}, **tables, **{k: v for k, v in SCHEMA.items() if k not in head}}


REQUIRED = ("torch.tag", "toolchain.python", "toolchain.gcc", "toolchain.cuda")
