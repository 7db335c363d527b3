"""``srcbuild doctor``: this machine's facts, what they allow, and a verdict for every catalog recipe.

A recipe *can build here now* when it passes the compatibility rules and the host preflight; it
*can build after installing* when only host pieces are missing (each with how to get it); it
*cannot build* when its pins break a compatibility rule.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from srcbuild.advice.fit import NO, rule_errors
from srcbuild.advice.recommend import GpuAdvice, recommend
from srcbuild.advice.window import driver_reach, version
from srcbuild.findings import Finding, Severity
from srcbuild.host.facts import HostFacts
from srcbuild.host.jobs import max_jobs
from srcbuild.knowledge import KnowledgeBase
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.records import record
from srcbuild.rules.host import MPI_LABELS, host_findings

READY, AFTER_INSTALL, CANNOT = "ready", "after-install", "cannot"
_ORDER = {READY: 0, AFTER_INSTALL: 1, CANNOT: 2}


@record
class RecipeVerdict:
    """``reasons``: rule messages (cannot) or the pieces to install (after-install), plus notes."""

    recipe: str
    status: str  # ready | after-install | cannot
    reasons: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = field(default=(), compare=False)
    gpu_fit: tuple[str, ...] = ()  # per GPU of this machine: the verdict compat and recommend give

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "status": self.status,
            "gpu_fit": list(self.gpu_fit),
            "reasons": list(self.reasons),
            "findings": [f.to_json() for f in self.findings],
        }


def missing_piece(finding: Finding, recipe: Recipe) -> str:
    """A short name for what a host finding says is missing: "CUDA 9.2", "gcc 7", "cuDNN 7.6 for CUDA 9.2"."""
    tc = recipe.toolchain
    mpi = f"{MPI_LABELS.get(recipe.mpi.implementation, recipe.mpi.implementation)} {recipe.mpi.version or ''}"
    labels = {
        "host-cuda": f"CUDA {tc.cuda}",
        "host-gcc": f"gcc {tc.gcc}",
        "host-cudnn": f"cuDNN {tc.cudnn} for CUDA {tc.cuda}",
        "host-mpi": mpi.strip(),
        "host-disk": "free disk space",
    }
    return labels.get(finding.rule, finding.message)


@record
class DoctorReport:
    host: HostFacts
    driver_cuda: str | None  # newest CUDA the driver runs natively
    driver_reach: str | None  # the same in words, with minor-version compatibility
    driver_notes: tuple[str, ...]  # per GPU: is this branch the last one for it
    gcc_hosts: dict[int, str]  # gcc major -> "CUDA 11.4 to 12.x" range text
    jobs: int
    jobs_reason: str
    verdicts: tuple[RecipeVerdict, ...]
    installs: tuple[tuple[str, str], ...] = ()  # (missing piece, how to get it), each piece once
    gpus: tuple[GpuAdvice, ...] = ()  # what to install first on each GPU (official wheel or recipe)
    checked: str = ""
    newest_known: str = ""  # the newest torch release the knowledge holds
    newest_seen: str = ""  # the newest release of each tracked project on the index, at the last refresh
    stale: str = ""  # a line when the knowledge is older than STALE_DAYS

    def to_json(self) -> dict[str, Any]:
        data = self.host.to_json()
        data["advice"] = [g.to_json() for g in self.gpus]
        data["knowledge_checked"] = self.checked or None
        data["knowledge_newest_torch"] = self.newest_known or None
        data["knowledge_newest_seen"] = self.newest_seen or None
        data["knowledge_stale"] = self.stale or None
        data["driver_cuda"] = self.driver_cuda
        data["driver_reach"] = self.driver_reach
        data["driver_notes"] = list(self.driver_notes)
        for gcc in data["gccs"]:
            gcc["hosts_cuda"] = self.gcc_hosts.get(gcc["major"])
        data["max_jobs"] = {"jobs": self.jobs, "reason": self.jobs_reason}
        data["recipes"] = [v.to_json() for v in self.verdicts]
        data["installs"] = [{"what": what, "how": how} for what, how in self.installs]
        return data


def gcc_hosts(kb: KnowledgeBase, major: int) -> str:
    """The CUDA releases whose nvcc accepts gcc ``major`` as host compiler, as "9.2 to 10.0"."""
    accepted = sorted((r.version for r in kb.cuda_releases if r.accepts_gcc(major)), key=version)
    if not accepted:
        return ""
    return accepted[0] if len(accepted) == 1 else f"{accepted[0]} to {accepted[-1]}"


def driver_notes(kb: KnowledgeBase, host: HostFacts) -> list[str]:
    """For each GPU: whether the installed driver branch is the last one for it."""
    if host.driver is None:
        return []
    notes = []
    for gpu in host.gpus:
        if gpu.cc is None:
            continue
        limit = kb.last_driver_for(gpu.cc)
        if limit is None or limit.last_branch is None:
            notes.append(f"{gpu.name}: current drivers still support it")
        elif host.driver.branch >= limit.last_branch:
            notes.append(f"{gpu.name}: R{limit.last_branch} is the last branch for {limit.generation}; this is it")
        else:
            notes.append(
                f"{gpu.name}: the last branch for {limit.generation} is R{limit.last_branch}; "
                f"this driver is R{host.driver.branch}"
            )
    return notes


def verdict(
    kb: KnowledgeBase, recipe: Recipe, host: HostFacts, paths: Paths, gpus: Sequence[GpuAdvice] = ()
) -> RecipeVerdict:
    # a CPU-only recipe's wheel runs on any machine: no GPU judges it
    judging = [g for g in gpus if g.window is not None] if recipe.toolchain.cuda is not None else []
    fits = tuple(next((f.status for f in g.recipes if f.recipe == recipe.name), NO) for g in judging)
    errors = rule_errors(kb, recipe)
    if errors:
        return RecipeVerdict(recipe.name, CANNOT, tuple(f.message for f in errors), tuple(errors), fits)
    misses = [f for f in host_findings(recipe, host, paths) if f.severity is Severity.ERROR]
    reasons = [f"needs {missing_piece(f, recipe)}" for f in misses]
    judged = judging
    if judged and all(status == NO for status in fits):
        why = [next((f.reasons[0] for f in g.recipes if f.recipe == recipe.name and f.reasons), "") for g in judged]
        names = ", ".join(f"{g.gpu.name}, {g.gpu.cc}" for g in judged)
        reasons.append(f"its wheel will not run on this machine's GPU ({names}): {why[0]}".rstrip(": "))
    return RecipeVerdict(recipe.name, AFTER_INSTALL if misses else READY, tuple(reasons), tuple(misses), fits)


def diagnose(
    kb: KnowledgeBase,
    host: HostFacts,
    recipes: Sequence[Recipe],
    paths: Paths,
    python_here: frozenset[str] | None = None,
    python_active: frozenset[str] | None = None,
) -> DoctorReport:
    """The doctor's report; ``python_here`` (the machine's Python versions) adds how to make the
    Python an official wheel needs when none of them runs it."""
    res = host.resources
    jobs, reason = max_jobs(res.memory_bytes if res else None, res.cores if res else 1)
    advice = recommend(
        kb, host.gpus, host.driver, recipes, "this machine", python_here=python_here, python_active=python_active
    ).gpus
    verdicts = sorted(
        (verdict(kb, r, host, paths, advice) for r in recipes), key=lambda v: (_ORDER[v.status], v.recipe)
    )
    installs: dict[str, str] = {}
    by_name = {r.name: r for r in recipes}
    for v in verdicts:
        if v.status == AFTER_INSTALL:
            for f in v.findings:
                installs.setdefault(missing_piece(f, by_name[v.recipe]), f.fix or f.message)
    return DoctorReport(
        host=host,
        driver_cuda=kb.max_cuda_for_driver(host.driver.version) if host.driver else None,
        driver_reach=driver_reach(kb, host.driver.version) if host.driver else None,
        driver_notes=tuple(driver_notes(kb, host)),
        gcc_hosts={g.major: gcc_hosts(kb, g.major) for g in host.gccs},
        jobs=jobs,
        jobs_reason=reason,
        verdicts=tuple(verdicts),
        installs=tuple(installs.items()),
        gpus=advice,
        checked=kb.checked,
        newest_known=kb.newest_known_torch,
        newest_seen=kb.newest_seen,
        stale=kb.stale_note(datetime.date.today()),
    )
