"""The resolve stage: recipe + options + host facts + knowledge -> one frozen ``ResolvedBuild``.

``parse`` (``srcbuild.recipe``) -> **resolve** -> plan (``srcbuild.plan``) -> execute
(``srcbuild.execute``). Every decision a build needs is made here once, with its origin
(default < recipe < environment < command line < host probe); later stages never re-decide.
"""

from __future__ import annotations

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
from srcbuild.resolve.packages import PACKAGE_NAMES, PACKAGES, PackageSpec, package_spec
from srcbuild.resolve.resolver import refusal, resolve

__all__ = [
    "PACKAGES",
    "PACKAGE_NAMES",
    "BuildHost",
    "BuildOptions",
    "CompilerChoice",
    "Origin",
    "PackageSpec",
    "Provider",
    "ResolvedBuild",
    "ResolvedEnv",
    "ResolvedPatch",
    "Setting",
    "Toolchain",
    "package_spec",
    "refusal",
    "resolve",
]
