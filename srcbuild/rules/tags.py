"""Rules on the release tags themselves and on build switches that contradict the recipe.

- A torch tag, or one of a package paired with it (torchvision, torchaudio), inside the
  releases the knowledge base knows, that was never released (v1.10.3: the 1.10 line ended at
  v1.10.2; v1.14.0: 1.13 was followed by 2.0; torchvision v0.8.3), is an error naming the
  nearest real tags. A tag newer than the knowledge base is a warning that says how old the
  knowledge is.
- ``[mpi] enabled`` with ``USE_MPI=0`` or ``USE_DISTRIBUTED=0`` in ``[build] env`` builds a wheel
  without the MPI backend the recipe asks for.

The known releases are the torch patch releases and the paired packages' releases of
``torch.toml`` (from Spack's py_torch/py_torchvision packages, pytorch/vision's README table,
pytorch/audio's compatibility matrix and the index's torchaudio wheels). Every line but the
newest is closed: PyTorch publishes patch releases for the newest line only
(pytorch/pytorch:RELEASE.md, "Release Cadence").
"""

from __future__ import annotations

from srcbuild.findings import Finding, Severity
from srcbuild.knowledge import versions
from srcbuild.knowledge.base import KnowledgeBase
from srcbuild.packages import package_spec
from srcbuild.rules.context import RecipeFacts, RecipeHints

CADENCE_SOURCE = "pytorch/pytorch:RELEASE.md (Release Cadence: patch releases for the newest line only)"
_TORCH_SOURCE = "spack/spack-packages:repos/spack_repo/builtin/packages/py_torch/package.py"


def pad(version: tuple[int, ...]) -> tuple[int, ...]:
    return (*version, 0, 0, 0)[:3]


def known_releases(kb: KnowledgeBase, project: str) -> list[tuple[int, ...]]:
    """Every release of ``project`` (torch, or a package paired with it) the knowledge base knows, oldest first."""
    return list(kb.release_versions(project))


def _tag(release: tuple[int, ...]) -> str:
    return "v" + versions.show(release)


def _check(project: str, tag: str, release: str | None, kb: KnowledgeBase, field: str, source: str) -> list[Finding]:
    parsed = versions.try_parse(release)
    known = known_releases(kb, project)
    if parsed is None or not known:
        return []
    wanted = pad(parsed)
    if wanted in known:
        return []
    newest = known[-1]
    checked = f" (last checked {kb.checked})" if kb.checked else ""
    if wanted > newest:
        return [
            Finding(
                rule=f"{project}-newer-than-knowledge",
                severity=Severity.WARNING,
                message=(
                    f"{project} {tag} is newer than srcbuild's knowledge{checked}, which ends at {_tag(newest)}; "
                    "its toolchain ranges are not checked."
                ),
                source=source,
                fix=f"Pin {_tag(newest)} or older, or check {project} {tag}'s requirements by hand.",
                field=field,
            )
        ]
    if wanted < known[0]:
        return []  # older than the knowledge base: torch_known / torchvision-unknown say so
    below = max(k for k in known if k < wanted)
    above = min(k for k in known if k > wanted)
    line = wanted[:2]
    if any(k[:2] == line and k > wanted for k in known):  # torchaudio went from 0.7.0 to 0.7.2
        why = f"{_tag(below)} was followed by {_tag(above)}"
    elif any(k[:2] == line for k in known):
        why = f"the {versions.show(line)} line ended at {_tag(max(k for k in known if k[:2] == line))}"
    else:
        why = f"there is no {versions.show(line)} line ({_tag(below)} was followed by {_tag(above)})"
    return [
        Finding(
            rule=f"{project}-tag-never-released",
            severity=Severity.ERROR,
            message=f"{project} {tag} was never released: {why}.",
            source=f"{source}; {CADENCE_SOURCE}",
            fix=f"Use {_tag(below)} or {_tag(above)}.",
            field=field,
        )
    ]


def release_tags(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """The torch tag and those of the packages built against it are releases that exist (or are
    newer than the knowledge)."""
    findings = _check("torch", facts.recipe.torch.tag, facts.torch, kb, "torch.tag", _TORCH_SOURCE)
    for package, release in facts.paired:
        spec = package_spec(package)
        tag = spec.pin(facts.recipe).tag
        findings += _check(package, tag, release, kb, f"{spec.recipe_table}.tag", spec.pairing_source)
    return findings


def mpi_switched_off(facts: RecipeFacts, kb: KnowledgeBase, hints: RecipeHints) -> list[Finding]:
    """``[mpi] enabled`` needs torch.distributed and its MPI backend built."""
    if not facts.recipe.mpi.enabled:
        return []
    off = [name for name in ("USE_MPI", "USE_DISTRIBUTED") if facts.env.get(name, "").strip().upper() in _FALSE]
    return [
        Finding(
            rule="mpi-switched-off",
            severity=Severity.ERROR,
            message=(
                f"[mpi] enabled asks for torch.distributed's MPI backend, but {name}=0 in [build] env builds "
                "the wheel without it."
            ),
            source="pytorch/pytorch:setup.py (USE_DISTRIBUTED, USE_MPI: 'enables MPI'; MPI needs USE_DISTRIBUTED)",
            fix=f"Remove {name} from [build] env, or set [mpi] enabled = false.",
            field="build.env",
        )
        for name in off
    ]


_FALSE = {"0", "OFF", "FALSE", "NO", "N"}
