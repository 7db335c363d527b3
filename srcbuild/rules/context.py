"""What every rule reads: the recipe's pins parsed once, and the catalog for "e.g. the recipe ..." hints."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge import versions
from srcbuild.knowledge.base import KnowledgeBase
from srcbuild.packages import PACKAGES
from srcbuild.recipe.model import Recipe
from srcbuild.records import record


@record
class RecipeFacts:
    """A recipe's pins as the rules compare them (versions without the tag's ``v``)."""

    recipe: Recipe
    torch: str | None  # "1.7.1"; None when the tag is not a release number
    torchvision: str | None
    python: str
    gcc: str
    gcc_major: int | None
    cuda: str | None  # None: CPU-only build
    cudnn: str | None
    arch: tuple[ComputeCapability, ...]
    env: dict[str, str]
    # (package, its release) of each package built against torch the recipe pins (srcbuild.packages)
    paired: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def of(cls, recipe: Recipe) -> RecipeFacts:
        gcc = versions.try_parse(recipe.toolchain.gcc)
        return cls(
            recipe=recipe,
            torch=_release(recipe.torch.tag),
            torchvision=_release(vision.tag) if (vision := recipe.pin_of("torchvision")) else None,
            python=recipe.toolchain.python,
            gcc=recipe.toolchain.gcc,
            gcc_major=gcc[0] if gcc else None,
            cuda=recipe.toolchain.cuda,
            cudnn=recipe.toolchain.cudnn,
            arch=tuple(sorted(recipe.gpu.arch)),
            env=recipe.build.env_dict,
            paired=tuple(
                (spec.name, _release(pin.tag))
                for spec in PACKAGES.values()
                if spec.needs_torch_wheel and (pin := recipe.pin_of(spec.recipe_table)) is not None
            ),
        )

    @property
    def lowest(self) -> ComputeCapability | None:
        return self.arch[0] if self.arch else None


def _release(tag: str) -> str | None:
    parsed = versions.try_parse(tag)
    return versions.show(parsed) if parsed and len(parsed) >= 2 else None


@record
class RecipeHints:
    """Catalog recipes to name in a fix ("e.g. the recipe kepler-cu102")."""

    recipes: tuple[Recipe, ...] = ()

    def suggest(
        self,
        cc: ComputeCapability,
        current: Recipe,
        cuda_ok: Callable[[str], bool] | None = None,
        kb: KnowledgeBase | None = None,
    ) -> str | None:
        """A catalog recipe (not ``current``) for ``cc`` whose CUDA passes ``cuda_ok``; newest CUDA first."""
        candidates = []
        for recipe in self.recipes:
            cuda = recipe.toolchain.cuda
            if recipe.name == current.name or cuda is None or cc not in recipe.gpu.arch:
                continue
            if cuda_ok is not None and not cuda_ok(cuda):
                continue
            if kb is not None:
                release = kb.cuda(cuda)
                if release is None or not release.accepts_cc(cc):
                    continue
            same_mpi = recipe.mpi.enabled == current.mpi.enabled
            candidates.append((same_mpi, versions.parse(cuda), recipe.name))
        if not candidates:
            return None
        return max(candidates)[2]

    def e_g(
        self,
        cc: ComputeCapability,
        current: Recipe,
        cuda_ok: Callable[[str], bool] | None = None,
        kb: KnowledgeBase | None = None,
    ) -> str:
        """``", e.g. the recipe NAME"`` for :meth:`suggest`'s answer, or nothing."""
        name = self.suggest(cc, current, cuda_ok, kb)
        return f", e.g. the recipe {name}" if name else ""


def catalog_hints(recipes: Sequence[Recipe] | None) -> RecipeHints:
    return RecipeHints(tuple(recipes or ()))
