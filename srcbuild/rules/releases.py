"""Rules on the torch and torchvision pins: the toolchain ranges each torch release accepts, the
torchvision made for it, and the lowest compute capability it still compiles for."""

from __future__ import annotations

from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import versions
from srcbuild.knowledge.base import KnowledgeBase
from srcbuild.knowledge.model import TorchRelease
from srcbuild.packages import package_spec
from srcbuild.rules.context import RecipeFacts, RecipeHints
from srcbuild.rules.tags import known_releases, pad


def _release(facts: RecipeFacts, kb: KnowledgeBase) -> TorchRelease | None:
    return kb.torch(facts.torch) if facts.torch else None


def _severity(release: TorchRelease, fact: str) -> Severity:
    return Severity.WARNING if release.is_unconfirmed(fact) else Severity.ERROR


def torch_known(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    if _release(facts, kb) is not None or _within_knowledge(kb, facts.torch, "torch"):
        return []  # never released, or newer than the knowledge base: rules.tags says which
    first, last = kb.torch_releases[0].line, kb.torch_releases[-1].line
    return [
        Finding(
            rule="torch-unknown",
            severity=Severity.WARNING,
            message=f"srcbuild has no data on torch {facts.recipe.torch.tag}; its toolchain ranges are not checked.",
            fix=f"Pin a torch release tag srcbuild knows (v{first}.0 to v{last}.x).",
            field="torch.tag",
        )
    ]


def _within_knowledge(kb: KnowledgeBase, release: str | None, project: str) -> bool:
    """Whether ``release`` is at or after the oldest release srcbuild knows (so rules.tags judges it)."""
    parsed = versions.try_parse(release)
    known = known_releases(kb, project)
    return parsed is not None and bool(known) and pad(parsed) >= known[0]


def torch_cuda(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    release = _release(facts, kb)
    if release is None or facts.cuda is None or versions.try_parse(facts.cuda) is None:
        return []
    cuda = versions.parse(facts.cuda)
    if not versions.at_least(cuda, versions.parse(release.cuda_min)):
        newest = kb.newest_torch(lambda r: _accepts_cuda(r, facts.cuda or ""))
        also = f", or torch {newest.line}.x, the newest line that accepts CUDA {facts.cuda}" if newest else ""
        return [
            Finding(
                rule="torch-cuda",
                severity=_severity(release, "cuda_min"),
                message=f"torch {facts.torch} needs CUDA ≥ {release.cuda_min}, not CUDA {facts.cuda}.",
                source=release.source,
                fix=f"Use CUDA {release.cuda_min} or later{also}.",
                field="toolchain.cuda",
            )
        ]
    if release.cuda_max is not None and not versions.at_most(cuda, versions.parse(release.cuda_max)):
        first = next((r for r in kb.torch_releases if _accepts_cuda(r, facts.cuda)), None)
        also = f", or torch {first.line} or later for CUDA {facts.cuda}" if first else ""
        return [
            Finding(
                rule="torch-cuda",
                severity=_severity(release, "cuda_max"),
                message=f"torch {facts.torch} accepts CUDA ≤ {release.cuda_max}, not CUDA {facts.cuda}.",
                source=release.source,
                fix=f"Use CUDA {release.cuda_max} or older{also}.",
                field="toolchain.cuda",
            )
        ]
    return []


def _accepts_cuda(release: TorchRelease, cuda: str) -> bool:
    v = versions.parse(cuda)
    return versions.at_least(v, versions.parse(release.cuda_min)) and (
        release.cuda_max is None or versions.at_most(v, versions.parse(release.cuda_max))
    )


def torch_python(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    release = _release(facts, kb)
    python = versions.try_parse(facts.python)
    if release is None or python is None:
        return []
    low, high = versions.parse(release.python_min), versions.parse(release.python_max)
    if versions.at_least(python, low) and versions.at_most(python, high):
        return []
    if versions.at_least(python, low):
        first = next(
            (r for r in kb.torch_releases if versions.at_most(python, versions.parse(r.python_max))),
            None,
        )
        first_ok = first and versions.at_least(python, versions.parse(first.python_min))
        also = f", or torch {first.line} or later for Python {facts.python}" if first and first_ok else ""
        fix = f"Use Python {release.python_max}{also}."
    else:
        fix = f"Use Python {release.python_min} to {release.python_max}."
    return [
        Finding(
            rule="torch-python",
            severity=_severity(release, "python_max"),
            message=(
                f"torch {facts.torch} supports Python {release.python_min} "
                f"to {release.python_max}, not Python {facts.python}."
            ),
            source=release.source,
            fix=fix,
            field="toolchain.python",
        )
    ]


def torch_gcc(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    release = _release(facts, kb)
    gcc = versions.try_parse(facts.gcc)
    if release is None or gcc is None:
        return []
    floor = versions.parse(release.gcc_min)
    if versions.at_least(gcc, floor):
        return []
    if gcc[0] == floor[0] and len(gcc) == 1:
        return [
            Finding(
                rule="torch-gcc-minor",
                severity=Severity.WARNING,
                message=(
                    f"torch {facts.torch} needs gcc ≥ {release.gcc_min}; "
                    f'gcc = "{facts.gcc}" does not say which {gcc[0]}.x.'
                ),
                source=release.source,
                fix=f"Make sure the gcc {gcc[0]} used is {release.gcc_min} or later, or use gcc {gcc[0] + 1}.",
                field="toolchain.gcc",
            )
        ]
    upto = ""
    cuda = kb.cuda(facts.cuda) if facts.cuda else None
    if cuda is not None:
        upto = f" (CUDA {facts.cuda} accepts up to gcc {cuda.max_gcc})"
    return [
        Finding(
            rule="torch-gcc",
            severity=_severity(release, "gcc_min"),
            message=f"torch {facts.torch} needs gcc ≥ {release.gcc_min}, not gcc {facts.gcc}.",
            source=release.source,
            fix=f"Use gcc {release.gcc_min} or later{upto}.",
            field="toolchain.gcc",
        )
    ]


def torch_cudnn(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    release = _release(facts, kb)
    cudnn = versions.try_parse(facts.cudnn)
    if release is None or cudnn is None or facts.cuda is None:
        return []
    low, high = versions.parse(release.cudnn_min), versions.parse(release.cudnn_max)
    if versions.at_least(cudnn, low) and versions.at_most(cudnn, high):
        return []
    if low == high:
        accepted = f"only cuDNN {release.cudnn_min}"
        use = f"cuDNN {release.cudnn_min}"
    else:
        accepted = f"cuDNN {release.cudnn_min} to {release.cudnn_max}"
        use = accepted
    return [
        Finding(
            rule="torch-cudnn",
            severity=_severity(release, "cudnn_max"),
            message=f"torch {facts.torch} accepts {accepted}, not cuDNN {facts.cudnn}.",
            source=release.source,
            fix=f"Use {use}, or drop cudnn from [toolchain] to build without it.",
            field="toolchain.cudnn",
        )
    ]


def paired_match(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """Each package built against torch (torchvision, torchaudio) is a release made for the recipe's
    torch, as the knowledge base's pairing map of that package says."""
    release = _release(facts, kb)
    if release is None:
        return []
    return [f for package, version in facts.paired for f in _paired(facts, kb, release, package, version)]


def paired_python(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """A paired package's release whose wheels cover less Python than its torch: a recipe Python
    outside that range is one upstream never built that release for (a warning)."""
    out = []
    python = versions.try_parse(facts.python)
    for package, version in facts.paired:
        found = kb.python_range_of(package, version) if version and python else None
        if found is None or python is None:
            continue
        low, high, source = found
        if versions.at_least(python, versions.parse(low)) and versions.at_least(versions.parse(high), python):
            continue
        spec = package_spec(package)
        out.append(
            Finding(
                rule=f"{package}-python",
                severity=Severity.WARNING,
                message=f"{package} {version} was published for Python {low} to {high}, not {facts.python}.",
                source=source,
                fix=f"Use a Python from {low} to {high}, or check that {package} {version} builds and runs on "
                f"{facts.python}.",
                field=f"{spec.recipe_table}.tag",
            )
        )
    return out


def _paired(
    facts: RecipeFacts, kb: KnowledgeBase, release: TorchRelease, package: str, version: str | None
) -> list[Finding]:
    spec = package_spec(package)
    pin = spec.pin(facts.recipe)
    expected = release.paired(package)
    field = f"{spec.recipe_table}.tag"
    if version is not None and version in expected:
        return []
    owner = kb.torch_for_package(package, version) if version else None
    wanted = " or ".join(f"v{v}" for v in expected)
    if owner is None and _within_knowledge(kb, version, package):
        return []  # never released, or newer than the knowledge base: rules.tags says which
    if owner is None:
        return [
            Finding(
                rule=f"{package}-unknown",
                severity=Severity.WARNING,
                message=f"srcbuild does not know which torch release {package} {pin.tag} belongs to.",
                source=release.source,
                fix=f"torch {facts.torch} pairs with {package} {wanted}." if expected else "",
                field=field,
            )
        ]
    return [
        Finding(
            rule=f"{package}-torch",
            severity=Severity.ERROR,
            message=f"{package} {version} belongs to torch {owner}, not torch {facts.torch}.",
            source=spec.pairing_source,
            fix=f"Use {package} {wanted}." if expected else f"Use torch {owner}.",
            field=field,
        )
    ]


def torch_arch(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """The lowest target must be one some CUDA this torch accepts can still compile for."""
    release = _release(facts, kb)
    cc = facts.lowest
    if release is None or cc is None or facts.cuda is None or cc >= release.lowest_cc:
        return []
    newest = kb.newest_torch(lambda r: r.lowest_cc <= cc)
    window = kb.cuda_window(cc)
    why = f"it needs CUDA ≥ {release.cuda_min}, and no CUDA from {release.cuda_min} on targets {cc}"
    if window and versions.at_least(versions.parse(release.cuda_min), versions.parse(window[-1].line)):
        why = f"it needs CUDA ≥ {release.cuda_min}, and CUDA {window[-1].line} was the last to target {cc}"
    if newest is not None:
        last = window[-1].line if window else None
        suggestion = hints.e_g(
            cc,
            facts.recipe,
            cuda_ok=(lambda c: last is not None and versions.at_most(versions.parse(c), versions.parse(last))),
            kb=kb,
        )
        fix = f"Use torch ≤ {newest.line}.x{suggestion}."
    else:
        fix = "No torch release srcbuild knows compiles for it."
    return [
        Finding(
            rule="torch-arch",
            severity=_severity(release, "cc_floor"),
            message=f"torch {facts.torch} cannot be built for compute capability {cc}: {why}.",
            source=release.source,
            fix=fix,
            field="gpu.arch",
        )
    ]
