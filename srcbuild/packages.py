"""The packages srcbuild builds: one registry entry per package, the only list of them.

Everything downstream asks the entry (``package_spec(name)``) instead of comparing the package's
name: the recipe schema (a ``[<recipe_table>]`` table per entry), the recipe's pins, the build
commands (``srcbuild <name>``), where its checkout lives, which of the recipe's patches are for
its tree, whether it builds against the recipe's own torch wheel, the variables its ``setup.py``
reads, ``install``'s routing, ``cache pull --recipe``, ``mirror create`` and the container build.

A leaf: it imports only the error and record types, so the command line can list the build
commands without loading the recipe machinery. Each summary is kept in ``srcbuild.usage``, which
prints ``srcbuild --help`` without importing this registry.

Adding a package is one ``PACKAGES`` entry here (``tests/unit/test_fake_package.py`` registers a
fake one and runs ``recipes show``, ``plan``, ``install --dry-run`` and ``cache pull --recipe``
on it with no other edit); its pairing with torch, where the knowledge base knows one, is a map of
the ``[[torch]]`` rows of ``knowledge/data/torch.toml`` named after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from srcbuild.errors import RecipeError, UsageError
from srcbuild.records import record
from srcbuild.usage import PACKAGE_SUMMARIES


@record
class SourcePin:
    """A git tag (and optionally the commit it must resolve to) of one repository: a recipe's pin
    of one package."""

    tag: str
    repo: str
    commit: str | None = None


class PinningRecipe(Protocol):
    """What the registry asks of a recipe (``srcbuild.recipe.model.Recipe``)."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> Path | None: ...

    def pin_of(self, table: str) -> SourcePin | None: ...


@record
class PackageSpec:
    """One buildable package."""

    name: str  # "torch": the wheel's name and the command's
    checkout_name: str  # the directory of its checkout under sources/<recipe>/
    recipe_table: str  # the recipe table that pins it
    patch_dir: str  # the recipe's patches under this directory are for this package's tree
    applies_recipe_patches: bool  # the recipe's [build] patches are applied to this package's tree
    needs_torch_wheel: bool  # built against the recipe's own torch wheel
    default_repo: str  # the git repository a recipe's table without repo = ... means
    summary: str  # the first sentence of ``srcbuild <name> --help``
    # the variable its setup.py reads the wheel's version from (torch's are made by its own function)
    version_variable: str = "BUILD_VERSION"
    # what its setup.py reads to compile its CUDA code on a machine without a GPU (a CUDA recipe only)
    cuda_variables: tuple[tuple[str, str], ...] = ()
    # the upstream table its pairing with torch rests on (a source, for messages)
    pairing_source: str = ""
    # its build has a canary step (one CMake configure + a few units; srcbuild.plan.canary): only a
    # package whose own build system has single-object targets can have one (docs/building.md)
    has_canary: bool = False

    @property
    def depends_on(self) -> tuple[str, ...]:
        """The packages built before it, in order (torch, for a package built against its wheel)."""
        return ("torch",) if self.needs_torch_wheel else ()

    def pin(self, recipe: PinningRecipe) -> SourcePin:
        """The recipe's pin of this package; RecipeError when the recipe has none."""
        pin = recipe.pin_of(self.recipe_table)
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
        return top == self.patch_dir or top not in patch_dirs()


PACKAGES: dict[str, PackageSpec] = {
    "torch": PackageSpec(
        name="torch",
        checkout_name="pytorch",
        recipe_table="torch",
        patch_dir="torch",
        applies_recipe_patches=True,
        needs_torch_wheel=False,
        default_repo="https://github.com/pytorch/pytorch",
        summary=PACKAGE_SUMMARIES["torch"],
        version_variable="PYTORCH_BUILD_VERSION",
        pairing_source="spack/spack-packages:repos/spack_repo/builtin/packages/py_torch/package.py",
        has_canary=True,
    ),
    "torchvision": PackageSpec(
        name="torchvision",
        checkout_name="vision",
        recipe_table="torchvision",
        patch_dir="torchvision",
        applies_recipe_patches=False,
        needs_torch_wheel=True,
        default_repo="https://github.com/pytorch/vision",
        summary=PACKAGE_SUMMARIES["torchvision"],
        # vision setup.py v0.5+: FORCE_CUDA builds the CUDA ops without a visible GPU
        cuda_variables=(("FORCE_CUDA", "1"),),
        pairing_source="spack/spack-packages:repos/spack_repo/builtin/packages/py_torchvision/package.py",
    ),
    "torchaudio": PackageSpec(
        name="torchaudio",
        checkout_name="audio",
        recipe_table="torchaudio",
        patch_dir="torchaudio",
        applies_recipe_patches=False,
        needs_torch_wheel=True,
        default_repo="https://github.com/pytorch/audio",
        summary=PACKAGE_SUMMARIES["torchaudio"],
        # audio tools/setup_helpers/extension.py (0.8+): USE_CUDA, else whether torch sees a GPU
        cuda_variables=(("USE_CUDA", "1"),),
        pairing_source="pytorch/audio:docs/source/installation.rst (Compatibility Matrix); the index's torchaudio "
        "wheels' Requires-Dist: torch==",
    ),
}


def package_names() -> tuple[str, ...]:
    """Every registered package, torch first."""
    return tuple(PACKAGES)


def patch_dirs() -> frozenset[str]:
    """The directories of recipe patches that belong to one package's tree."""
    return frozenset(spec.patch_dir for spec in PACKAGES.values())


def package_spec(name: str) -> PackageSpec:
    """The spec of ``name``; a UsageError that lists the valid names otherwise."""
    try:
        return PACKAGES[name]
    except KeyError:
        raise UsageError(f"unknown package {name!r}", f"choose one of: {', '.join(PACKAGES)}") from None


def build_order(name: str) -> tuple[str, ...]:
    """``name`` and every package it is built against, dependencies first (``torchaudio`` →
    ``("torch", "torchaudio")``): the pipelines a build of ``name`` runs, in order."""
    order: list[str] = []

    def visit(package: str) -> None:
        for dependency in package_spec(package).depends_on:
            visit(dependency)
        if package not in order:
            order.append(package)

    visit(name)
    return tuple(order)


def pinned_packages(recipe: PinningRecipe) -> tuple[str, ...]:
    """The registered packages ``recipe`` pins, torch first."""
    return tuple(name for name, spec in PACKAGES.items() if recipe.pin_of(spec.recipe_table) is not None)


def version_of_tag(tag: str) -> str:
    """``v1.7.1`` → ``1.7.1``; ``v2.0.0-rc1`` → ``2.0.0rc1``."""
    from packaging.version import InvalidVersion, Version

    text = tag[1:] if tag[:1] in ("v", "V") else tag
    try:
        return str(Version(text))
    except InvalidVersion:
        return text
