"""The packages srcbuild builds: one registry entry per package, the only list of them.

Everything downstream asks the entry (``package_spec(name)``) instead of comparing the package's
name: which recipe table pins it, where its checkout lives, which of the recipe's patches are for
its tree, whether it builds against the recipe's own torch wheel. The build variables its
``setup.py`` reads are the one thing that is code: ``srcbuild.resolve.variables.VARIABLES`` maps
each registered name to the function that makes them.

Adding a package type is one ``PACKAGES`` entry here plus its function in ``VARIABLES``
(``tests/unit/resolve/test_packages.py`` checks that every entry has one).
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from srcbuild.errors import RecipeError, UsageError
from srcbuild.recipe.model import Recipe, SourcePin
from srcbuild.records import record


@record
class PackageSpec:
    """One buildable package."""

    name: str  # "torch": the wheel's name and the command's
    checkout_name: str  # the directory of its checkout under sources/<recipe>/
    recipe_table: str  # the recipe table that pins it
    patch_dir: str  # the recipe's patches under this directory are for this package's tree
    applies_recipe_patches: bool  # the recipe's [build] patches are applied to this package's tree
    needs_torch_wheel: bool  # built against the recipe's own torch wheel

    def pin(self, recipe: Recipe) -> SourcePin:
        """The recipe's pin of this package; RecipeError when the recipe has none."""
        pin: SourcePin | None = getattr(recipe, self.recipe_table, None)
        if pin is None:
            raise RecipeError(
                f"recipe {recipe.name} pins no {self.name} tag",
                f"add a [{self.recipe_table}] table with tag = ... to {recipe.path or recipe.name}",
            )
        return pin

    def counts_patch(self, patch_name: str) -> bool:
        """Whether a recipe patch (``torch/v1.7.1/0001-x.patch``) changes this package's wheel: one
        under this package's directory, or one under no package's directory."""
        top = patch_name.replace("\\", "/").split("/", 1)[0]
        return top == self.patch_dir or top not in PATCH_DIRS


PACKAGES: dict[str, PackageSpec] = {
    "torch": PackageSpec(
        name="torch",
        checkout_name="pytorch",
        recipe_table="torch",
        patch_dir="torch",
        applies_recipe_patches=True,
        needs_torch_wheel=False,
    ),
    "torchvision": PackageSpec(
        name="torchvision",
        checkout_name="vision",
        recipe_table="torchvision",
        patch_dir="torchvision",
        applies_recipe_patches=False,
        needs_torch_wheel=True,
    ),
}
PACKAGE_NAMES = tuple(PACKAGES)
PATCH_DIRS = frozenset(spec.patch_dir for spec in PACKAGES.values())


def package_spec(name: str) -> PackageSpec:
    """The spec of ``name``; a UsageError that lists the valid names otherwise."""
    try:
        return PACKAGES[name]
    except KeyError:
        raise UsageError(f"unknown package {name!r}", f"choose one of: {', '.join(PACKAGES)}") from None


def version_of_tag(tag: str) -> str:
    """``v1.7.1`` → ``1.7.1``; ``v2.0.0-rc1`` → ``2.0.0rc1``."""
    text = tag[1:] if tag[:1] in ("v", "V") else tag
    try:
        return str(Version(text))
    except InvalidVersion:
        return text
