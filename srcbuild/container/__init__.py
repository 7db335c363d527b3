"""Containers: Dockerfiles for a recipe, building in a devel image, and the container runtime checks.

``dockerfile_for`` is what ``srcbuild plan --format dockerfile`` prints; ``build`` runs
``srcbuild container build``; ``runtime_checks`` is ``srcbuild doctor --containers``.
"""

from __future__ import annotations

from typing import Optional

from srcbuild.container.dockerfile import DockerfileSpec, render_dockerfile
from srcbuild.container.images import choose_bases, custom_bases
from srcbuild.paths import catalog_dir
from srcbuild.recipe import Recipe

# Set by `srcbuild container build` in the container: the devel image's id, which the cache entry
# records among its resolved facts (``container_image``).
BUILD_IMAGE_VAR = "SRCBUILD_BUILD_IMAGE"


def recipe_file(recipe: Recipe) -> Optional[str]:
    """The file name of a recipe outside the catalog (it has to travel in the build context)."""
    if recipe.path is None or recipe.path.resolve().parent == catalog_dir().resolve():
        return None
    return recipe.path.name


def dockerfile_spec(
    recipe: Recipe, package: str, mirrors: tuple[str, ...] = (), base: Optional[str] = None
) -> DockerfileSpec:
    bases = custom_bases(base, recipe) if base else choose_bases(recipe)
    return DockerfileSpec(recipe, package, bases, mirrors, recipe_file(recipe))


def dockerfile_for(recipe: Recipe, package: str, mirrors: tuple[str, ...] = (), base: Optional[str] = None) -> str:
    """The multi-stage Dockerfile of ``srcbuild plan PACKAGE --recipe R --format dockerfile``."""
    return render_dockerfile(dockerfile_spec(recipe, package, mirrors, base))
