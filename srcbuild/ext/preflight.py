"""What stops an extension build before it compiles: torch, nvcc and the recipe must agree.

- A CUDA recipe with a CPU-only torch: nothing in that torch can run a CUDA kernel (error).
- nvcc's CUDA major must equal ``torch.version.cuda``'s: torch.utils.cpp_extension refuses a
  different major ("The detected CUDA version (X) mismatches the version that was used to compile
  PyTorch (Y)") and only warns about a different minor, and so does this check
  (pytorch/pytorch: torch/utils/cpp_extension.py, ``_check_cuda_version``).
- Each recipe arch must be one the nvcc accepts (the CUDA release's arch range, knowledge data)
  and should be one the torch holds kernels for (read from its binaries): an extension for an arch
  torch's own kernels miss loads, but every torch operation on that GPU fails with "no kernel image"
  (a warning: the extension itself is what was asked for).
- A CPU recipe with a CUDA torch builds a CPU-only extension (a warning).
- The extension release must support that torch where upstream states which torch versions it
  supports (``ext.knowledge``'s ``torch`` ranges, with their sources): outside the range is an
  error naming both; a release (or a package) with no stated range is a warning.

Each check is a ``Finding``; ``refusal`` turns the errors into the build's exit code (3).
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild.capability import ComputeCapability
from srcbuild.errors import IncompatibleError
from srcbuild.ext.knowledge import ExtensionKnowledge
from srcbuild.ext.torch import TorchIdentity
from srcbuild.findings import Finding, Severity
from srcbuild.verify.kernels import coverage, sm_text

CPP_EXTENSION_SOURCE = "pytorch/pytorch: torch/utils/cpp_extension.py (_check_cuda_version)"


def _major_minor(version: str) -> tuple[int, int]:
    parts = [int(p) for p in version.split(".")[:2] if p.isdigit()]
    return (parts[0], parts[1] if len(parts) > 1 else 0) if parts else (0, 0)


def ext_findings(
    recipe_name: str,
    cuda: str | None,
    archs: Sequence[ComputeCapability],
    torch: TorchIdentity,
    nvcc_version: str | None,
    nvcc_accepts: tuple[ComputeCapability, ...] | None,
    nvcc_source: str = "",
) -> tuple[Finding, ...]:
    """Every finding about building for ``recipe_name`` (its CUDA and archs) against ``torch``.

    ``nvcc_version`` is the measured version of the nvcc the build uses (None: not found; the host
    checks say so), ``nvcc_accepts`` the set of archs its release's ptxas compiles for (``ArchTargets.capabilities``:
    a set, not a span).
    """
    out: list[Finding] = []
    if cuda is None:
        if torch.cuda is not None:
            out.append(Finding(
                "ext-cpu-recipe-cuda-torch", Severity.WARNING,
                f"recipe {recipe_name} is CPU-only and {torch.describe()} has CUDA {torch.cuda}: the extension "
                "is built without CUDA kernels",
                fix="use a CUDA recipe to build its CUDA kernels",
            ))
        return tuple(out)
    archs_text = ", ".join(str(a) for a in sorted(archs))
    if torch.cuda is None:
        out.append(Finding(
            "ext-cpu-torch", Severity.ERROR,
            f"recipe {recipe_name} builds CUDA {cuda} kernels for {archs_text}, but {torch.describe()} is "
            "CPU-only (torch.version.cuda is None): no CUDA kernel can run through it",
            fix="build against a CUDA torch (--torch VERSION+cuXY, --torch-wheel FILE, or the recipe's own torch "
            "wheel), or use a CPU recipe",
            field="toolchain.cuda",
        ))
        return tuple(out)
    if nvcc_version:
        have, want = _major_minor(nvcc_version), _major_minor(torch.cuda)
        if have[0] != want[0]:
            out.append(Finding(
                "ext-cuda-major", Severity.ERROR,
                f"nvcc is CUDA {nvcc_version} and torch {torch.version} was built with CUDA {torch.cuda}: "
                "torch.utils.cpp_extension refuses a different CUDA major version",
                source=CPP_EXTENSION_SOURCE,
                fix=f"use a recipe whose CUDA is {want[0]}.x, or a torch built for CUDA {have[0]}.x",
                field="toolchain.cuda",
            ))
        elif have != want:
            out.append(Finding(
                "ext-cuda-minor", Severity.WARNING,
                f"nvcc is CUDA {nvcc_version} and torch {torch.version} was built with CUDA {torch.cuda}: "
                "a minor version apart, which torch.utils.cpp_extension accepts with a warning",
                source=CPP_EXTENSION_SOURCE,
            ))
    if nvcc_accepts is not None:
        refused = [a for a in sorted(archs) if a not in nvcc_accepts]
        if refused:
            accepted = " ".join(str(a) for a in sorted(nvcc_accepts))
            out.append(Finding(
                "ext-nvcc-arch", Severity.ERROR,
                f"nvcc of CUDA {nvcc_version or cuda} compiles for compute capability {accepted}, not for "
                + ", ".join(str(a) for a in refused),
                source=nvcc_source,
                fix="use a recipe whose CUDA still targets these GPUs (srcbuild compat --gpu NAME)",
                field="gpu.arch",
            ))
    missing = [a for a in sorted(archs) if not coverage(torch.kernels, a).runs]
    if missing:
        names = ", ".join(str(a) for a in missing)
        out.append(Finding(
            "ext-torch-kernels", Severity.WARNING,
            f"torch {torch.version} holds no kernels for compute capability {names} (it has SASS for "
            f"{sm_text(torch.kernels.sass)}, PTX for {sm_text(torch.kernels.ptx)}): the extension is built for "
            f"{names} as asked, but torch's own operations on such a GPU fail with 'no kernel image'",
            fix="build torch for these archs with the same recipe (srcbuild torch --recipe R) and build against it",
            field="gpu.arch",
        ))
    return tuple(out)


def range_findings(knowledge: ExtensionKnowledge, release: str | None, torch: str) -> tuple[Finding, ...]:
    """Whether ``knowledge.name`` ``release`` supports torch version ``torch`` ("2.0.1+cu117"), where
    upstream states it: the version alone, known before the wheel is (its file name says it)."""
    public = torch.split("+", 1)[0]
    what = f"{knowledge.name} {release}" if release else f"{knowledge.name} (a git source: its release is not known)"
    spec = knowledge.torch_range(release) if release else None
    if spec is None:
        return (Finding(
            "ext-torch-range-unknown", Severity.WARNING,
            f"srcbuild knows no torch range upstream states for {what}: whether it builds against torch "
            f"{torch} is found out by compiling",
            fix="check the extension's README or setup.py for the torch versions it supports",
        ),)
    try:
        inside = Version(public) in SpecifierSet(spec)
    except InvalidVersion:
        inside = True  # a torch version packaging cannot read is not judged here
    if inside:
        return (Finding(
            "ext-torch-range", Severity.INFO,
            f"{what} supports torch {spec}, and torch {torch} is in that range",
            source=knowledge.torch_source,
        ),)
    return (Finding(
        "ext-torch-range", Severity.ERROR,
        f"{what} supports torch {spec}, and torch {torch} is outside that range",
        source=knowledge.torch_source,
        fix=f"build against a torch in {spec}, or pick the {knowledge.name} release made for torch "
        f"{public}",
    ),)


def refusal(findings: Sequence[Finding], ignore: bool = False) -> IncompatibleError | None:
    """The error that stops the build (exit 3), or None when no finding is an error (or ``ignore``)."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if not errors or ignore:
        return None
    first = errors[0]
    more = f" (and {len(errors) - 1} more above)" if len(errors) > 1 else ""
    return IncompatibleError(
        f"preflight: {first.message}{more}",
        (first.fix or "see the findings above") + "; --ignore-preflight builds anyway",
    )
