"""Findings: what a check (compatibility rule, host probe, verification) says about a recipe.

All checks report every finding at once; the caller decides whether errors stop the work.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from srcbuild.records import record


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@record
class Finding:
    """One statement about a recipe or a machine: what, why (with its source) and what to do."""

    rule: str  # stable identifier, e.g. "cuda-arch-range"
    severity: Severity
    message: str  # what is wrong, one sentence
    source: str = ""  # where the fact comes from (repository path, issue or URL)
    fix: str = ""  # a concrete thing to do instead
    field: str = ""  # the recipe key path it is about, e.g. "toolchain.cuda"

    def render(self) -> str:
        """One paragraph for a terminal."""
        text = f"{self.severity.value}: {self.message}"
        if self.source:
            text += f" (source: {self.source})"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text

    def to_json(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "source": self.source,
            "fix": self.fix,
            "field": self.field,
        }


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)
