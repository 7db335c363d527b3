"""The build variables of each registered package (``srcbuild.recipe.packages``), looked up by name."""

from __future__ import annotations

from srcbuild.errors import UsageError
from srcbuild.recipe.packages import PACKAGE_NAMES, PACKAGES, PackageSpec, package_spec
from srcbuild.resolve.variables import VARIABLES, Variables


def package_variables(spec: PackageSpec) -> Variables:
    """The function that makes ``spec``'s build variables (recipe, tools, knowledge base)."""
    try:
        return VARIABLES[spec.name]
    except KeyError:
        raise UsageError(f"package {spec.name!r} has no build variables", "register them in VARIABLES") from None


__all__ = ["PACKAGES", "PACKAGE_NAMES", "PackageSpec", "package_spec", "package_variables"]
