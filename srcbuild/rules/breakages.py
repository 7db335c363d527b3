"""Rules from the breakage table: known problems of old torch tags on newer tools or legacy GPUs.

A breakage applies when its torch range and every recipe condition hold, and no ``[build] env``
setting listed in ``resolved_by_env`` is present. Host-tool conditions (``when_host``) are for
``build_pins`` and the host preflight; here they only show what srcbuild does about them.
"""

from __future__ import annotations

from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import versions
from srcbuild.knowledge.base import KnowledgeBase
from srcbuild.knowledge.model import Breakage
from srcbuild.rules.context import RecipeFacts, RecipeHints


def known_breakages(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    if facts.torch is None:
        return []
    findings = []
    for breakage in kb.breakages_for(facts.torch):
        if not _applies(breakage, facts) or _resolved(breakage, facts):
            continue
        findings.append(
            Finding(
                rule=f"breakage-{breakage.id}",
                severity=_severity(breakage),
                message=f"torch {facts.torch} with {breakage.trigger}: {breakage.symptom}.",
                source=breakage.source,
                fix=breakage.fix + ".",
                field=_field(breakage),
            )
        )
    return findings


def _applies(b: Breakage, facts: RecipeFacts) -> bool:
    if b.when_host is not None and not b.handled:
        return False
    below = b.when_arch_below
    if below is not None and (facts.cuda is None or not any(cc < below for cc in facts.arch)):
        return False
    if b.when_torchvision and facts.recipe.pin_of("torchvision") is None:
        return False
    checks = (
        (b.when_gcc, facts.gcc),
        (b.when_cuda, facts.cuda),
        (b.when_python, facts.python),
        (b.when_cudnn, facts.cudnn),
    )
    for spec, value in checks:
        if spec is not None and (value is None or not versions.matches(spec, value)):
            return False
    return True


def _resolved(b: Breakage, facts: RecipeFacts) -> bool:
    for setting in b.resolved_by_env:
        name, _, value = setting.partition("=")
        if facts.env.get(name) == value:
            return True
    return False


def _severity(b: Breakage) -> Severity:
    if b.handled:
        return Severity.INFO
    if b.unconfirmed:
        return Severity.WARNING
    return Severity(b.severity)


def _field(b: Breakage) -> str:
    if b.action == "env":
        return "build.env"
    if b.action == "patch":
        return "build.patches"
    if b.when_gcc:
        return "toolchain.gcc"
    if b.when_cuda:
        return "toolchain.cuda"
    return "torch.tag"
