"""The recipe format: every table, key and value check, as data.

Each key maps to a ``Field``: the TOML type it must have, an optional check of its value that
returns a reason when the value is wrong, and a description (used by README's reference).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from srcbuild.capability import ComputeCapability

Check = Callable[[object], "str | None"]

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
PYTHON_RE = re.compile(r"^3\.\d{1,2}$")
GCC_RE = re.compile(r"^\d{1,2}(\.\d+){0,2}$")
CUDA_RE = re.compile(r"^\d{1,2}\.\d(\.\d+)?$")
CUDNN_RE = re.compile(r"^\d{1,2}\.\d+(\.\d+){0,2}$")
MPI_VERSION_RE = re.compile(r"^\d+(\.\d+){0,2}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MPI_IMPLEMENTATIONS = ("openmpi", "mpich", "mvapich2", "intel-mpi")


@dataclass(frozen=True)
class Field:
    kind: type | tuple[type, ...]
    description: str
    check: Check | None = None
    item_kind: type | None = None  # for lists: the type of each item
    item_check: Check | None = None


def _matches(regex: re.Pattern[str], expected: str) -> Check:
    def check(value: object) -> str | None:
        if not regex.match(str(value)):
            return f"{value!r} is not {expected}"
        return None

    return check


def _tag(value: object) -> str | None:
    text = str(value)
    if not text or any(c.isspace() for c in text) or text.startswith("-"):
        return f"{value!r} is not a git tag name"
    return None


def _repo(value: object) -> str | None:
    text = str(value)
    if re.match(r"^(https?|ssh|git|file)://\S+$", text) or re.match(r"^git@[\w.-]+:\S+$", text):
        return None
    if text.startswith("/"):
        return None
    return f"{value!r} is not a git URL (https://..., git@host:path, file://... or an absolute path)"


def _cuda(value: object) -> str | None:
    if value == "none" or CUDA_RE.match(str(value)):
        return None
    return f'{value!r} is not a CUDA version (expected a form like "11.8" or "none" for a CPU-only build)'


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
        if not ENV_NAME_RE.match(key):
            return f"{key!r} is not an environment variable name"
        if not isinstance(item, str):
            return f'{key} = {item!r} must be a string (write {key} = "{item}")'
    return None


def _patch_path(value: object) -> str | None:
    text = str(value)
    if text.startswith("/") or ".." in text.split("/"):
        return f"{value!r} must be a path relative to a patches directory, without '..'"
    if not text.endswith((".patch", ".diff")):
        return f"{value!r} is not a patch file (expected a name ending in .patch or .diff)"
    return None


def _name(value: object) -> str | None:
    if NAME_RE.match(str(value)):
        return None
    return f"{value!r} is not a recipe name (lowercase letters, digits, '.', '_' and '-')"


SOURCE_TABLE = {
    "tag": Field(str, 'git tag to build, e.g. "v1.7.1"', _tag),
    "commit": Field(str, "40-hex commit the tag must resolve to (optional)", _matches(COMMIT_RE, "a 40-hex commit")),
    "repo": Field(str, "git URL of the repository", _repo),
}

SCHEMA: dict[str, Field | dict[str, Field]] = {
    "name": Field(str, "recipe name; defaults to the file name", _name),
    "description": Field(str, "one line: which GPUs this serves"),
    "extends": Field(str, "name of a parent recipe; tables merge key by key, this file wins", _name),
    "torch": SOURCE_TABLE,
    "torchvision": SOURCE_TABLE,
    "toolchain": {
        "python": Field(str, 'Python major.minor, e.g. "3.8"', _matches(PYTHON_RE, 'a Python version like "3.8"')),
        "gcc": Field(str, 'gcc major (or major.minor), e.g. "7"', _matches(GCC_RE, 'a gcc version like "7" or "11.2"')),
        "cuda": Field(str, 'CUDA version, e.g. "9.2", or "none" for a CPU-only build', _cuda),
        "cudnn": Field(
            str,
            'cuDNN version, e.g. "7.6" (absent: build without cuDNN)',
            _matches(CUDNN_RE, 'a cuDNN version like "7.6" or "8.0.5"'),
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
    },
    "env": {
        "conda": Field(list, "extra conda packages (match specs)", item_kind=str),
        "channels": Field(list, "conda channels, highest priority first", item_kind=str),
        "pip": Field(list, "extra pip requirements", item_kind=str),
    },
}

REQUIRED = ("torch.tag", "toolchain.python", "toolchain.gcc", "toolchain.cuda")
