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
    out = list(_cuda_findings(recipe_name, cuda, archs, torch.describe(), torch.version, torch.cuda, nvcc_version))
    if cuda is None or torch.cuda is None:
        return tuple(out)
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


def _cuda_findings(
    recipe_name: str,
    cuda: str | None,
    archs: Sequence[ComputeCapability],
    described: str,
    version: str,
    torch_cuda: str | None,
    nvcc_version: str | None,
) -> tuple[Finding, ...]:
    """The findings about the recipe's CUDA and torch's (``torch_cuda``: None for a CPU-only
    torch), the torch named as ``described``."""
    out: list[Finding] = []
    if cuda is None:
        if torch_cuda is not None:
            out.append(Finding(
                "ext-cpu-recipe-cuda-torch", Severity.WARNING,
                f"recipe {recipe_name} is CPU-only and {described} has CUDA {torch_cuda}: the extension "
                "is built without CUDA kernels",
                fix="use a CUDA recipe to build its CUDA kernels",
            ))
        return tuple(out)
    archs_text = ", ".join(str(a) for a in sorted(archs))
    if torch_cuda is None:
        out.append(Finding(
            "ext-cpu-torch", Severity.ERROR,
            f"recipe {recipe_name} builds CUDA {cuda} kernels for {archs_text}, but {described} is "
            "CPU-only (torch.version.cuda is None): no CUDA kernel can run through it",
            fix="build against a CUDA torch (--torch VERSION+cuXY, --torch-wheel FILE, or the recipe's own torch "
            "wheel), or use a CPU recipe",
            field="toolchain.cuda",
        ))
        return tuple(out)
    if nvcc_version:
        have, want = _major_minor(nvcc_version), _major_minor(torch_cuda)
        if have[0] != want[0]:
            out.append(Finding(
                "ext-cuda-major", Severity.ERROR,
                f"nvcc is CUDA {nvcc_version} and torch {version} was built with CUDA {torch_cuda}: "
                "torch.utils.cpp_extension refuses a different CUDA major version",
                source=CPP_EXTENSION_SOURCE,
                fix=f"use a recipe whose CUDA is {want[0]}.x, or a torch built for CUDA {have[0]}.x",
                field="toolchain.cuda",
            ))
        elif have != want:
            out.append(Finding(
                "ext-cuda-minor", Severity.WARNING,
                f"nvcc is CUDA {nvcc_version} and torch {version} was built with CUDA {torch_cuda}: "
                "a minor version apart, which torch.utils.cpp_extension accepts with a warning",
                source=CPP_EXTENSION_SOURCE,
            ))
    return tuple(out)


def label_cuda(version: str) -> str | bool | None:
    """What a torch version's local label says of its CUDA: "11.7" for +cu117, None for +cpu (a
    CPU-only torch), False when it says nothing (no label, or another kind). PyTorch's own index
    names its builds so (``torch-2.0.1+cu117-...whl``, ``torch-2.13.0+cpu-...whl``: the last digit
    is the minor version) and torch's ``version.py`` holds the same label."""
    label = version.partition("+")[2]
    if label == "cpu":
        return None
    digits = label[2:]
    if label.startswith("cu") and digits.isdigit() and len(digits) >= 2:
        return f"{int(digits[:-1])}.{digits[-1]}"
    return False


def label_findings(
    recipe_name: str, cuda: str | None, archs: Sequence[ComputeCapability], version: str, nvcc_version: str | None
) -> tuple[Finding, ...]:
    """The findings the torch version's label decides before its wheel is read (``label_cuda``);
    the wheel's own (``ext_findings``) replace them once it is."""
    said = label_cuda(version)
    if said is False:
        return ()
    assert said is None or isinstance(said, str)
    label = version.partition("+")[2]
    return _cuda_findings(recipe_name, cuda, archs, f"torch {version} (by its +{label} label)", version, said,
                          nvcc_version)


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
