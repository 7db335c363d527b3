"""Rules about what a recipe lets run: a ``[build] env`` that sets more than build switches.

``[build] env`` is an allowlist (``recipe.schema.is_build_variable``); the loader refuses any other
variable (PATH, LD_PRELOAD, CMAKE_TOOLCHAIN_FILE, NVCC_PREPEND_FLAGS ...) unless ``[build]
allow_env_override = true``; this rule then warns, naming each, so every ``recipes check`` and
every build's preflight says it out loud.
"""

from __future__ import annotations

from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import KnowledgeBase
from srcbuild.recipe.schema import changes_what_runs
from srcbuild.rules.context import RecipeFacts, RecipeHints


def env_override(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    names = sorted(name for name, value in facts.env.items() if changes_what_runs(name, value))
    if not names:
        return []
    return [
        Finding(
            rule="env-override",
            severity=Severity.WARNING,
            message=(
                f"[build] env sets {', '.join(names)}, which are not build switches and may change which "
                "programs the build runs or what they load (allowed by allow_env_override = true)."
            ),
            source="docs/security.md",
            fix="Read the recipe's [build] env before building; remove the override if the build does not need it.",
            field="build.env",
        )
    ]
