"""The resolve stage: recipe + options + host facts + knowledge -> one frozen ``ResolvedBuild``.

``parse`` (``srcbuild.recipe``) -> **resolve** -> plan (``srcbuild.plan``) -> execute
(``srcbuild.execute``). Every decision a build needs is made here once, with its origin
(default < recipe < environment < command line < host probe); later stages never re-decide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srcbuild.resolve.inputs import BuildHost, BuildOptions
    from srcbuild.resolve.model import (
        CompilerChoice,
        Origin,
        Provider,
        ResolvedBuild,
        ResolvedEnv,
        ResolvedPatch,
        Setting,
        Toolchain,
    )
    from srcbuild.resolve.resolver import refusal, resolve

# Each name from the module that holds it, imported on first use (PEP 562): a module of the package
# (``resolve.request``, what a cache lookup keys on) is imported without the whole resolver.
_OFFERS = {
    **dict.fromkeys(("BuildHost", "BuildOptions"), "srcbuild.resolve.inputs"),
    **dict.fromkeys(
        (
            "CompilerChoice",
            "Origin",
            "Provider",
            "ResolvedBuild",
            "ResolvedEnv",
            "ResolvedPatch",
            "Setting",
            "Toolchain",
        ),
        "srcbuild.resolve.model",
    ),
    **dict.fromkeys(("refusal", "resolve"), "srcbuild.resolve.resolver"),
}

__all__ = [
    "BuildHost",
    "BuildOptions",
    "CompilerChoice",
    "Origin",
    "Provider",
    "ResolvedBuild",
    "ResolvedEnv",
    "ResolvedPatch",
    "Setting",
    "Toolchain",
    "refusal",
    "resolve",
]


def __getattr__(name: str) -> Any:
    if name not in _OFFERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_OFFERS[name]), name)
