"""Compatibility rules: every check of a recipe against the knowledge base, reported all at once.

``check_recipe(recipe)`` runs each rule in ``RULES`` and returns every finding (errors, warnings and
notes). Each rule is a small function ``(facts, kb, hints) -> list[Finding]`` with its own written
message; the facts behind it live in ``srcbuild/knowledge/data``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import KnowledgeBase, load_knowledge
from srcbuild.recipe.model import Recipe
from srcbuild.rules import breakages, cudnn, releases, tags, toolchain, trust
from srcbuild.rules.context import RecipeFacts, RecipeHints, catalog_hints

Rule = Callable[[RecipeFacts, KnowledgeBase, RecipeHints], "list[Finding]"]

RULES: tuple[Rule, ...] = (
    toolchain.cuda_known,
    toolchain.cuda_arch,
    toolchain.cuda_arch_deprecated,
    toolchain.gcc_vs_cuda,
    releases.torch_known,
    tags.release_tags,
    tags.mpi_switched_off,
    releases.torch_arch,
    releases.torch_cuda,
    releases.torch_python,
    releases.torch_gcc,
    releases.torch_cudnn,
    releases.paired_match,
    releases.paired_python,
    cudnn.cudnn_build,
    cudnn.cudnn_arch,
    breakages.known_breakages,
    toolchain.driver_support,
    toolchain.kepler_ptx,
    trust.env_override,
)

_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def check_recipe(
    recipe: Recipe,
    kb: KnowledgeBase | None = None,
    catalog: Sequence[Recipe] | None = None,
) -> list[Finding]:
    """Every finding of every rule on ``recipe``, errors first.

    ``catalog`` supplies the recipes a fix may name ("e.g. the recipe kepler-cu102"); without it the
    fixes name none.
    """
    knowledge = kb or load_knowledge()
    facts = RecipeFacts.of(recipe)
    hints = catalog_hints(catalog)
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule(facts, knowledge, hints))
    return sorted(findings, key=lambda f: _ORDER[f.severity])


__all__ = ["RULES", "RecipeFacts", "RecipeHints", "check_recipe"]
