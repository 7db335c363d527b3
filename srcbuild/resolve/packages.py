"""The packages srcbuild builds, as a small registry of specs: what differs between torch and torchvision.

Everything downstream asks the spec (``package_spec(name)``) instead of comparing the package's
name: which recipe pin it builds, where its checkout lives, whether it applies the recipe's
patches, whether it builds against the recipe's torch wheel, and which build variables its
``setup.py`` reads (``srcbuild.resolve.variables``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from srcbuild.envmods import EnvChanges
from srcbuild.errors import RecipeError, UsageError
from srcbuild.recipe import Recipe, SourcePin
from srcbuild.resolve.variables import Toolset, torch_variables, vision_variables


@dataclass(frozen=True)
class PackageSpec:
    """One buildable package."""

    name: str  # "torch": the wheel's name and the command's
    checkout_name: str  # the directory of its checkout under sources/<recipe>/
    recipe_table: str  # the recipe table that pins it
    applies_recipe_patches: bool  # the recipe's [build] patches are for this package's tree
    needs_torch_wheel: bool  # built against the recipe's own torch wheel
    variables: Callable[[Recipe, Toolset, object], EnvChanges]  # (recipe, tools, knowledge base)

    def pin(self, recipe: Recipe) -> SourcePin:
        """The recipe's pin of this package; RecipeError when the recipe has none."""
        pin: SourcePin | None = getattr(recipe, self.recipe_table)
        if pin is None:
            raise RecipeError(
                f"recipe {recipe.name} pins no {self.name} tag",
                f"add a [{self.recipe_table}] table with tag = ... to {recipe.path or recipe.name}",
            )
        return pin


PACKAGES: dict[str, PackageSpec] = {
    "torch": PackageSpec(
        name="torch",
        checkout_name="pytorch",
        recipe_table="torch",
        applies_recipe_patches=True,
        needs_torch_wheel=False,
        variables=torch_variables,
    ),
    "torchvision": PackageSpec(
        name="torchvision",
        checkout_name="vision",
        recipe_table="torchvision",
        applies_recipe_patches=False,
        needs_torch_wheel=True,
        variables=vision_variables,
    ),
}
PACKAGE_NAMES = tuple(PACKAGES)


def package_spec(name: str) -> PackageSpec:
    """The spec of ``name``; a UsageError that lists the valid names otherwise."""
    try:
        return PACKAGES[name]
    except KeyError:
        raise UsageError(f"unknown package {name!r}", f"choose one of: {', '.join(PACKAGES)}") from None
