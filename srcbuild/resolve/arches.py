"""Compute capabilities torch's ``cpp_extension`` never lists in ``supported_arches``.

torch's ``torch/utils/cpp_extension.py`` checks TORCH_CUDA_ARCH_LIST against its
``supported_arches`` list when an extension is built, and no torch release lists '3.0' there, so
torchvision's build for a recipe with ``gpu.arch = ["3.0"]`` stops with
``ValueError: Unknown CUDA arch (3.0) or GPU not supported`` (pytorch/vision#1841). Which
arches: ``[[unlisted_arch]]`` rows of ``srcbuild/knowledge/data/build.toml``.
"""

from __future__ import annotations

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge.build_facts import BuildFacts
from srcbuild.recipe import Recipe


def unlisted_arches(recipe: Recipe, facts: BuildFacts) -> tuple[ComputeCapability, ...]:
    """The recipe's compute capabilities torch's cpp_extension refuses (CUDA builds only)."""
    if recipe.toolchain.cuda is None:
        return ()
    return tuple(cc for cc in sorted(recipe.gpu.arch) if cc in facts.unlisted_arches)
