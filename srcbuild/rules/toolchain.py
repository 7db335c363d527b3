"""Rules on the CUDA toolkit: which compute capabilities nvcc targets, which host gcc it accepts, and
what the last driver of each GPU generation can run."""

from __future__ import annotations

from srcbuild.capability import generation
from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import versions
from srcbuild.knowledge.base import KnowledgeBase
from srcbuild.knowledge.build_facts import load_build_facts
from srcbuild.rules.context import RecipeFacts, RecipeHints


def cuda_known(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    if facts.cuda is None or kb.cuda(facts.cuda) is not None:
        return []
    first, last = kb.cuda_releases[0].line, kb.cuda_releases[-1].line
    return [
        Finding(
            rule="cuda-unknown",
            severity=Severity.WARNING,
            message=(
                f"srcbuild has no data on CUDA {facts.cuda}; its compute capability and gcc limits are not checked."
            ),
            fix=f"Use a CUDA release srcbuild knows ({first} to {last}).",
            field="toolchain.cuda",
        )
    ]


def cuda_arch(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """Every ``[gpu] arch`` entry must be in the set of targets this CUDA's ptxas accepts (a set, not a
    range: CUDA 12.8 targets 10.0 and 12.0 but not 10.3; CUDA 13.0 renamed 10.1 to 11.0)."""
    release = kb.cuda(facts.cuda) if facts.cuda else None
    if release is None:
        return []
    findings = []
    for cc in facts.arch:
        if release.accepts_cc(cc):
            continue
        window = [r.line for r in kb.cuda_window(cc)]
        support = kb.arch(cc)
        lines = [r.line for r in kb.cuda_releases]
        if not window:
            why = "no CUDA release srcbuild knows targets it"
            fix = "No CUDA release srcbuild knows targets it; remove it from [gpu] arch."
        elif versions.parse(window[0]) > versions.parse(release.line):
            why = f"sm_{cc.sm} arrived with nvcc {window[0]}"
            fix = f"Use CUDA ≥ {window[0]}" + (f" (up to {window[-1]})." if window[-1] != lines[-1] else ".")
        elif versions.parse(window[-1]) < versions.parse(release.line):
            removed = lines[lines.index(window[-1]) + 1]
            why = f"nvcc {removed} removed sm_{cc.sm}"
            fix = f"Use CUDA ≤ {window[-1]}{hints.e_g(cc, facts.recipe, kb=kb)}."
        else:
            why = f"nvcc {release.line} has no sm_{cc.sm}"
            fix = f"Use a CUDA release that targets it: {', '.join(window)}."
        evidence = f"CUDA {release.line}'s ptxas accepts {release.targets.describe()}: {release.targets.source}"
        sources = [evidence] + ([support.source] if support else [])
        findings.append(
            Finding(
                rule="cuda-arch",
                severity=Severity.ERROR,
                message=f"CUDA {facts.cuda} cannot target compute capability {cc} ({why}).",
                source="; ".join(sources),
                fix=fix,
                field="gpu.arch",
            )
        )
    return findings


def cuda_arch_deprecated(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    release = kb.cuda(facts.cuda) if facts.cuda else None
    if release is None:
        return []
    deprecated = [cc for cc in facts.arch if cc in release.deprecated_cc and release.accepts_cc(cc)]
    if not deprecated:
        return []
    names = ", ".join(str(cc) for cc in deprecated)
    return [
        Finding(
            rule="cuda-arch-deprecated",
            severity=Severity.INFO,
            message=f"nvcc {facts.cuda} still targets compute capability {names} but warns that it is deprecated.",
            source=release.source,
            fix="Nothing to do; -Wno-deprecated-gpu-targets in TORCH_NVCC_FLAGS silences the warning.",
            field="gpu.arch",
        )
    ]


def gcc_vs_cuda(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """The host gcc must be one this CUDA's crt/host_config.h accepts."""
    release = kb.cuda(facts.cuda) if facts.cuda else None
    gcc = facts.gcc_major
    if release is None or gcc is None or facts.cuda is None:
        return []
    if release.min_gcc is not None and gcc < release.min_gcc:
        return [
            Finding(
                rule="gcc-cuda",
                severity=Severity.ERROR,
                message=f"CUDA {facts.cuda} needs host gcc ≥ {release.min_gcc}, not gcc {gcc}.",
                source=release.source,
                fix=f"Use gcc {release.min_gcc} to {release.max_gcc}.",
                field="toolchain.gcc",
            )
        ]
    if gcc > release.max_gcc:
        if release.max_gcc_warn is not None and gcc <= release.max_gcc_warn:
            return [
                Finding(
                    rule="gcc-cuda-disputed",
                    severity=Severity.WARNING,
                    message=(
                        f"CUDA {facts.cuda} may not accept host gcc {gcc}: "
                        f"the sources disagree above gcc {release.max_gcc}."
                    ),
                    source=release.source,
                    fix=f"Use gcc {release.max_gcc} to be safe.",
                    field="toolchain.gcc",
                )
            ]
        newer = _first_cuda_for_gcc(kb, gcc, facts)
        also = f", or CUDA {newer} or later for gcc {gcc}" if newer else ""
        return [
            Finding(
                rule="gcc-cuda",
                severity=Severity.ERROR,
                message=(
                    f"CUDA {facts.cuda} accepts host gcc ≤ {release.max_gcc}, "
                    f"not gcc {gcc} (its crt/host_config.h rejects newer gcc)."
                ),
                source=release.source,
                fix=f"Use gcc {release.max_gcc}{also}.",
                field="toolchain.gcc",
            )
        ]
    findings = []
    for patch in release.unresolved_patches:
        if patch.max_gcc is not None and gcc > patch.max_gcc:
            findings.append(
                Finding(
                    rule="gcc-cuda-patch",
                    severity=Severity.WARNING,
                    message=(
                        f"CUDA {patch.upto_version} and earlier {release.line} "
                        f"releases accept host gcc ≤ {patch.max_gcc}; "
                        f'cuda = "{facts.cuda}" does not say which {release.line} release the build gets.'
                    ),
                    source=patch.source,
                    fix=(
                        f"Pin a later {release.line} release (e.g. cuda = "
                        f'"{_next_patch(patch.upto_version)}"), or use gcc {patch.max_gcc}.'
                    ),
                    field="toolchain.cuda",
                )
            )
    for caveat in kb.gcc_caveats:
        if caveat.applies(facts.cuda, gcc):
            findings.append(
                Finding(
                    rule="gcc-cuda-caveat",
                    severity=Severity.WARNING,
                    message=f"CUDA {facts.cuda} with gcc {gcc}: {caveat.message}.",
                    source=caveat.source,
                    fix=caveat.fix
                    + (f"; a gcc srcbuild provisions is pinned to {caveat.good}" if caveat.good else "")
                    + ".",
                    field="toolchain.gcc",
                )
            )
    return findings


def _first_cuda_for_gcc(kb: KnowledgeBase, gcc: int, facts: RecipeFacts) -> str | None:
    """The oldest CUDA release that accepts ``gcc`` and still targets every arch of the recipe."""
    for release in kb.cuda_releases:
        if release.accepts_gcc(gcc) and all(release.accepts_cc(cc) for cc in facts.arch):
            too_old = [p for p in release.patches if p.upto_version and p.max_gcc is not None and p.max_gcc < gcc]
            return _next_patch(too_old[-1].upto_version) if too_old else release.line
    return None


def _next_patch(version: str | None) -> str:
    parsed = versions.parse(version or "0.0.0")
    return versions.show((*parsed[:-1], parsed[-1] + 1))


def driver_support(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """The toolkit's minimum driver must exist for the GPU generation (warning: it is about the run host)."""
    release = kb.cuda(facts.cuda) if facts.cuda else None
    if release is None or facts.lowest is None:
        return []
    findings = []
    seen: set[int] = set()
    compat = load_build_facts()
    for cc in facts.arch:
        limit = kb.last_driver_for(cc)
        if limit.last_branch is None or limit.last_branch in seen or not release.accepts_cc(cc):
            continue
        branch = kb.driver_branch(limit.last_branch)
        if branch is None or versions.at_most(versions.parse(release.line), versions.parse(branch.cuda)):
            continue
        seen.add(limit.last_branch)
        major = versions.parse(release.line)[0]
        floor = compat.minor_compat_floor.get(major)
        if floor and versions.parse(branch.cuda)[0] == major:
            fix = (
                f"The wheel still runs on R{limit.last_branch} through CUDA {major}.x minor-version compatibility "
                f"(driver ≥ {floor}), but that driver cannot JIT-compile CUDA "
                f"{release.line} PTX: keep SASS for every GPU in [gpu] arch."
            )
        else:
            fix = f"Use CUDA ≤ {branch.cuda}."
        # A recipe that already keeps SASS for every GPU (no PTX) follows the fix: a note, not a warning.
        followed = bool(floor) and versions.parse(branch.cuda)[0] == major and not facts.recipe.gpu.ptx
        findings.append(
            Finding(
                rule="driver-cuda",
                severity=Severity.INFO if followed else Severity.WARNING,
                message=(
                    f"CUDA {facts.cuda} needs driver ≥ {release.min_driver or '(not known yet)'}, "
                    f"but the last driver for {limit.generation} GPUs "
                    f"(compute capability {cc}) is R{limit.last_branch}, which natively runs CUDA ≤ {branch.cuda}."
                ),
                source=f"{limit.source}; {compat.minor_compat_source}",
                fix=fix,
                field="toolchain.cuda",
            )
        )
    return findings


def kepler_ptx(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """PTX in the wheel only helps a GPU whose driver can JIT it; R470 cannot JIT PTX newer than CUDA 11.4."""
    release = kb.cuda(facts.cuda) if facts.cuda else None
    if release is None or not facts.recipe.gpu.ptx or not facts.arch:
        return []
    kepler = [cc for cc in facts.arch if generation(cc) == "Kepler"]
    if not kepler:
        return []
    limit = kb.last_driver_for(kepler[0])
    compat = load_build_facts()
    branch = kb.driver_branch(limit.last_branch) if limit.last_branch else None
    if branch is None or versions.at_most(versions.parse(release.line), versions.parse(branch.cuda)):
        return []
    return [
        Finding(
            rule="kepler-ptx",
            severity=Severity.WARNING,
            message=(
                f"ptx = true embeds CUDA {release.line} PTX, which the last Kepler driver (R{limit.last_branch}, "
                f"CUDA {branch.cuda}) cannot JIT-compile; Kepler GPUs only run the SASS built for [gpu] arch."
            ),
            source=f"{limit.source}; {compat.minor_compat_source}",
            fix="List every compute capability you run on in [gpu] arch and set ptx = false.",
            field="gpu.ptx",
        )
    ]
