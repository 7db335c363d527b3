"""Recipes: the TOML format, its validation and the catalog lookup."""

from srcbuild.recipe.catalog import RecipeCatalog
from srcbuild.recipe.load import RecipeLoader
from srcbuild.recipe.model import Build, EnvTable, ExtensionPin, Gpu, Mpi, Recipe, SourcePin, Toolchain

__all__ = [
    "Build",
    "EnvTable",
    "ExtensionPin",
    "Gpu",
    "Mpi",
    "Recipe",
    "RecipeCatalog",
    "RecipeLoader",
    "SourcePin",
    "Toolchain",
]
