"""Rules on the cuDNN pin: a build for this CUDA must exist, and it must support the target GPUs."""

from __future__ import annotations

from srcbuild.capability import ComputeCapability
from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import versions
from srcbuild.knowledge.base import KnowledgeBase
from srcbuild.rules.context import RecipeFacts, RecipeHints


def cudnn_build(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    if facts.cudnn is None or facts.cuda is None or versions.try_parse(facts.cuda) is None:
        return []
    release = kb.cudnn(facts.cudnn)
    if release is None:
        return [
            Finding(
                rule="cudnn-unknown",
                severity=Severity.WARNING,
                message=(
                    f"srcbuild has no data on cuDNN {facts.cudnn}; whether "
                    f"it exists for CUDA {facts.cuda} is not checked."
                ),
                fix=_choices(kb, facts.cuda, facts.lowest),
                field="toolchain.cudnn",
            )
        ]
    if release.has_build_for(facts.cuda):
        return []
    builds = ", ".join(release.cuda)
    return [
        Finding(
            rule="cudnn-cuda",
            severity=Severity.ERROR,
            message=f"cuDNN {facts.cudnn} has no build for CUDA {facts.cuda} (NVIDIA published it for CUDA {builds}).",
            source=release.source,
            fix=_choices(kb, facts.cuda, facts.lowest),
            field="toolchain.cudnn",
        )
    ]


def cudnn_arch(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    cc = facts.lowest
    if facts.cudnn is None or facts.cuda is None or cc is None or versions.try_parse(facts.cuda) is None:
        return []
    release = kb.cudnn(facts.cudnn)
    if release is None or not release.has_build_for(facts.cuda):
        return []
    lowest = release.lowest_cc_for(facts.cuda)
    if lowest is None or cc >= lowest:
        return []
    major = versions.parse(facts.cuda)[0]
    why = ""
    if cc.major == 3 and lowest.major > 3:
        why = f" (cuDNN {facts.cudnn} has no Kepler support)"
    return [
        Finding(
            rule="cudnn-arch",
            severity=Severity.WARNING if release.unconfirmed else Severity.ERROR,
            message=(
                f"cuDNN {facts.cudnn} for CUDA {major}.x supports compute capability {lowest} and later, not {cc}{why}."
            ),
            source=release.source,
            fix=_choices(kb, facts.cuda, cc),
            field="toolchain.cudnn",
        )
    ]


def _choices(kb: KnowledgeBase, cuda: str, cc: ComputeCapability | None) -> str:
    """A fix naming the cuDNN lines that have a build for ``cuda`` supporting ``cc``."""
    lines = []
    for release in kb.cudnn_releases:
        if not release.has_build_for(cuda) or release.unconfirmed:
            continue
        lowest = release.lowest_cc_for(cuda)
        if cc is not None and (lowest is None or cc < lowest):
            continue
        line = versions.show(versions.parse(release.version)[:2])
        if line not in lines:
            lines.append(line)
    gpu = f" that supports compute capability {cc}" if cc is not None else ""
    if not lines:
        return f"No cuDNN release has a build for CUDA {cuda}{gpu}; drop cudnn from [toolchain] to build without it."
    return f"Use cuDNN {_span(lines)}: each has a build for CUDA {cuda}{gpu}. Or drop cudnn from [toolchain]."


def _span(lines: list[str]) -> str:
    return lines[0] if len(lines) == 1 else f"{lines[0]} to {lines[-1]}"
