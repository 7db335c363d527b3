"""Finding recipes: ``--recipe NAME`` in the search directories, ``--recipe path.toml`` as a file.

The search directories are those in ``SRCBUILD_RECIPES_PATH`` (first) and the built-in catalog.
A name found in an earlier directory hides the same name in a later one. A recipe file that does
not load fails only the commands that name it: ``scan`` returns it apart, with its error, and
every command that looks at the whole catalog (``recipes list``, ``doctor``, ``recommend``)
works with the others.
"""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path

from srcbuild.errors import RecipeError
from srcbuild.paths import Paths
from srcbuild.recipe.load import RecipeLoader, display_path, shipped_recipe
from srcbuild.recipe.model import Recipe
from srcbuild.records import record


def is_path_argument(text: str) -> bool:
    return text.endswith(".toml") or "/" in text or text.startswith(".")


@record
class BrokenRecipe:
    """A recipe file in the search path that does not load, and why."""

    name: str
    path: Path
    error: RecipeError

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "path": str(self.path), "error": self.error.message, "hint": self.error.hint}


class RecipeCatalog:
    """Every recipe reachable by name, plus loading by name or path."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self.loader = RecipeLoader(paths.recipe_dirs, paths.patches_dirs)

    def names(self) -> dict[str, Path]:
        """Recipe name -> file, earlier directories winning."""
        found: dict[str, Path] = {}
        for directory in self.paths.recipe_dirs:
            if not directory.is_dir():
                continue
            for file in sorted(directory.glob("*.toml")):
                found.setdefault(file.stem, file)
        return found

    def find(self, name_or_path: str) -> Path:
        if is_path_argument(name_or_path):
            path = Path(name_or_path)
            if not path.is_file():
                raise RecipeError(f"{name_or_path}: no such recipe file")
            return path
        names = self.names()
        if name_or_path in names:
            return names[name_or_path]
        close = difflib.get_close_matches(name_or_path, list(names), n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else "run `srcbuild recipes list` to see the catalog"
        raise RecipeError(f"no recipe named '{name_or_path}'", hint)

    def load(self, name_or_path: str) -> Recipe:
        return self.loader.load(self.find(name_or_path))

    def scan(self) -> tuple[list[Recipe], list[BrokenRecipe]]:
        """Every reachable recipe loaded, and apart the files that do not load (each with its error)."""
        recipes: list[Recipe] = []
        broken: list[BrokenRecipe] = []
        for name, path in self.names().items():
            try:
                recipes.append(self.loader.load(path))
            except RecipeError as exc:
                broken.append(BrokenRecipe(name, path, exc))
        return recipes, broken

    def load_all(self) -> list[Recipe]:
        """Every reachable recipe that loads; a broken file only fails the commands that name it."""
        return self.scan()[0]


def recipe_reference(recipe: Recipe) -> str:
    """How a hint names ``recipe`` without a catalog at hand: its name for a recipe of the built-in
    catalog, else the path of its file as given (shell-quoted), so the command works when pasted."""
    if recipe.path is None or shipped_recipe(recipe.path):
        return shlex.quote(recipe.name)
    return shlex.quote(display_path(recipe.path))


def recipe_argument(recipe: Recipe, paths: Paths) -> str:
    """How to name ``recipe`` in a command a hint prints: its name when ``--recipe NAME`` finds
    this very file, else its path (shell-quoted), so that the command works when pasted."""
    if recipe.path is None:
        return shlex.quote(recipe.name)
    found = RecipeCatalog(paths).names().get(recipe.name)
    if found is not None and found.resolve() == recipe.path.resolve():
        return shlex.quote(recipe.name)
    return shlex.quote(display_path(recipe.path))
