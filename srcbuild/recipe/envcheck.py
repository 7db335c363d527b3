"""A recipe's ``[env]`` lists are package names, never options.

``env.pip`` entries reach ``pip install`` and ``env.conda``/``env.channels`` reach the conda
solver as arguments. An entry that starts with ``-`` would be an option there:
``--index-url=http://elsewhere/`` makes pip download from another server (the effect
``PIP_INDEX_URL`` has, which ``[build] env`` refuses), ``--override-channels`` or ``-c`` changes
where conda looks. So each entry must be what its field says:

* ``env.pip``: a PEP 508 requirement, parsed with ``packaging.requirements.Requirement``, by name
  and version: a direct reference (``name @ https://...``, ``name @ file:///...``) makes pip
  download from where the recipe says, as ``--index-url`` would, and needs ``[build]
  allow_env_override = true``;
* ``env.conda``: a conda match spec (a package name, optionally ``channel::``, a version and a
  build string), not starting with ``-``; its ``channel::`` follows the ``env.channels`` rule;
* ``env.channels``: a channel name (``conda-forge``, ``nvidia/label/cuda-11.8.0``) or an
  ``https://`` or ``file://`` URL (a plain ``http://`` channel can be swapped on the way).
"""

from __future__ import annotations

from collections.abc import Iterable

from srcbuild.errors import RecipeError
from srcbuild.patterns import LazyPattern

_CONDA_SPEC = LazyPattern(r"(?:[A-Za-z0-9_.\-/:]+::)?[A-Za-z0-9_][A-Za-z0-9_.\-]*(?:[ =<>!~*,|.\[\]\w'\"\-+]*)")
_CHANNEL_NAME = LazyPattern(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_.\-]+)*")
_CHANNEL_URL = LazyPattern(r"(?:https|file)://[^\s]+")

_WHAT = {
    "env.pip": ("a requirement", "write a requirement like 'ninja>=1.10' (pip options do not belong in a recipe)"),
    "env.conda": ("a conda package spec", "write a package spec like 'mkl=2020.2' (conda options do not belong here)"),
    "env.channels": ("a channel name or URL", "write a channel like 'conda-forge' or an https:// URL"),
}


def _valid(field: str, entry: str) -> bool:
    if field == "env.pip":
        from packaging.requirements import InvalidRequirement, Requirement  # its grammar compiles when imported

        try:
            Requirement(entry)
        except InvalidRequirement:
            return False
        return True
    if field == "env.conda":
        return bool(_CONDA_SPEC.fullmatch(entry))
    return bool(_CHANNEL_NAME.fullmatch(entry) or _CHANNEL_URL.fullmatch(entry))


def check_env_entries(entries: Iterable[object], field: str, where: str, allow_override: bool = False) -> list[str]:
    """``entries`` when each is what ``field`` takes; RecipeError naming the first that is not.
    ``allow_override`` (``[build] allow_env_override``) lets an ``env.pip`` entry be a direct reference."""
    what, hint = _WHAT[field]
    checked = []
    for i, entry in enumerate(entries):
        text = str(entry)
        if text.lstrip().startswith("-"):
            raise RecipeError(f"{where}: {field}[{i}]: {text!r} is an option, not {what}", hint)
        channel = text.strip().split("::", 1)[0] if field == "env.conda" and "::" in text else None
        if channel is not None and not (_CHANNEL_NAME.fullmatch(channel) or _CHANNEL_URL.fullmatch(channel)):
            raise RecipeError(
                f"{where}: {field}[{i}]: {text!r} takes the package from channel {channel!r}, which is not a "
                "channel name or an https:// or file:// URL",
                "name the channel in env.channels (https only) and the package here without 'channel::'",
            )
        if field == "env.channels" and text.strip().lower().startswith("http://"):
            raise RecipeError(
                f"{where}: {field}[{i}]: {text!r} is a plain http:// channel, which anyone on the way can swap",
                "use the channel's https:// URL (or a file:// one for a local channel)",
            )
        if not _valid(field, text.strip()):
            raise RecipeError(f"{where}: {field}[{i}]: {text!r} is not {what}", hint)
        if field == "env.pip" and not allow_override and _direct_reference(text.strip()):
            raise RecipeError(
                f"{where}: {field}[{i}]: {text!r} is a direct reference: pip would download it from that URL "
                "instead of the package index; refused unless [build] allow_env_override = true",
                "name the package and its version ('ninja>=1.10'), or set allow_env_override = true under [build] "
                "if the recipe must take it from that URL",
            )
        checked.append(text)
    return checked


def _direct_reference(entry: str) -> bool:
    """Whether a (valid) PEP 508 requirement names a URL (``name @ url``)."""
    from packaging.requirements import Requirement

    return Requirement(entry).url is not None
