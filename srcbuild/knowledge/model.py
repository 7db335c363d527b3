"""The knowledge base's rows as frozen dataclasses: CUDA, drivers, GPUs, torch, cuDNN, breakages.

Each row carries ``source``: where the fact comes from. Rows marked ``unconfirmed`` rest on one weak
source; rules built on them warn instead of rejecting.
"""

from __future__ import annotations

from dataclasses import field

import srcbuild.knowledge.versions as versions
from srcbuild.capability import ComputeCapability
from srcbuild.records import record


@record
class CudaPatch:
    """Patch-level nuance of a CUDA release: applies ``from`` a patch release on, or ``upto`` one."""

    from_version: str | None
    upto_version: str | None
    max_gcc: int | None
    min_driver: str | None
    source: str

    def applies_to(self, version: str) -> bool:
        v = versions.parse(version)
        if self.from_version is not None:
            return versions.at_least(v, versions.parse(self.from_version))
        assert self.upto_version is not None
        return versions.at_most(v, versions.parse(self.upto_version))


@record
class ArchTargets:
    """The GPU targets one CUDA release's ``ptxas --gpu-name`` (``nvcc --list-gpu-code`` /
    ``--list-gpu-arch``) accepts: a set, not a range (CUDA 12.8 has sm_101 and sm_120 but no sm_103;
    CUDA 13.0 renamed sm_101 to sm_110).

    ``sass`` are the ``sm_*`` names without the prefix, ``ptx`` the ``compute_*`` ones; arch-specific
    variants keep their letter ("90a", "100f"). ``source`` is the binary read (file name and sha256)
    or the document the set was taken from.
    """

    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    source: str

    def has(self, cc: ComputeCapability) -> bool:
        """Whether plain ``sm_XY`` code (what ``TORCH_CUDA_ARCH_LIST`` asks for) can be made for ``cc``."""
        return str(cc.sm) in self.sass

    @property
    def capabilities(self) -> tuple[ComputeCapability, ...]:
        """The capabilities with plain SASS, lowest first."""
        return tuple(sorted(ComputeCapability.from_sm(int(n)) for n in self.sass if n.isdigit()))

    def describe(self) -> str:
        """"sm_50 sm_52 ... sm_120a" as one line."""
        return " ".join(f"sm_{n}" for n in self.sass)


@record
class CudaRelease:
    """What one CUDA toolkit release accepts. ``version`` is as asked ("11.4.1"), ``line`` the row ("11.4")."""

    version: str
    line: str
    min_cc: ComputeCapability
    max_cc: ComputeCapability
    deprecated_cc: tuple[ComputeCapability, ...]
    min_gcc: int | None  # None: no known floor
    max_gcc: int
    max_gcc_warn: int | None  # sources disagree above max_gcc: gcc up to this only warns
    min_driver: str | None  # None: a named gap (a binary cannot say it; see ``gaps``)
    source: str
    targets: ArchTargets
    patches: tuple[CudaPatch, ...] = ()
    # patch rows that may apply but the pinned version is too coarse to tell (cuda = "11.4")
    unresolved_patches: tuple[CudaPatch, ...] = ()
    gaps: tuple[str, ...] = ()  # facts of this row no source read so far states ("min_driver")

    def accepts_cc(self, cc: ComputeCapability) -> bool:
        """Whether this release's ptxas makes SASS for ``cc`` (its set, not the span min_cc..max_cc)."""
        return self.targets.has(cc)

    def accepts_gcc(self, gcc_major: int) -> bool:
        return (self.min_gcc is None or gcc_major >= self.min_gcc) and gcc_major <= self.max_gcc


@record
class ArchSupport:
    """The CUDA releases whose nvcc targets a compute capability (``cuda_max`` None: still current)."""

    cc: ComputeCapability
    cuda_min: str
    cuda_max: str | None
    source: str
    reported_torch: str | None = None  # newest torch reported to build and run there, when known
    reported_source: str = ""


@record
class GccCaveat:
    """A host gcc problem narrower than a gcc major (e.g. gcc 10.3+ with CUDA up to 11.4.0)."""

    cuda_min: str
    cuda_max: str
    gcc: int
    message: str
    fix: str
    source: str
    good: str | None = None  # the newest good release of that gcc major ("10.2"): what srcbuild provisions

    def applies(self, cuda: str, gcc_major: int) -> bool:
        v = versions.parse(cuda)
        return (
            gcc_major == self.gcc
            and versions.at_least(v, versions.parse(self.cuda_min))
            and versions.at_most(v, versions.parse(self.cuda_max))
        )


@record
class DriverBranch:
    branch: int
    cuda: str  # the newest CUDA whose GA minimum driver this branch satisfies
    source: str


@record
class DriverLimit:
    """The last driver branch and CUDA toolkit for a range of compute capabilities."""

    generation: str
    min_cc: ComputeCapability
    max_cc: ComputeCapability
    last_branch: int | None  # None: current drivers still support it
    last_cuda: str | None
    source: str
    unconfirmed: bool = False


@record
class GpuChip:
    """A GPU chip: compute capability, PCI device ids (with product names) and id ranges."""

    name: str
    generation: str
    cc: ComputeCapability
    devices: tuple[tuple[int, str], ...]
    ranges: tuple[tuple[int, int], ...]
    source: str

    def device_name(self, device_id: int) -> str | None:
        return dict(self.devices).get(device_id)


@record
class GpuModel:
    """A marketing name on one chip. ``ambiguous``: the name also exists on a chip of another capability."""

    name: str
    chip: str
    cc: ComputeCapability
    pci_ids: tuple[int, ...]
    ambiguous: bool
    source: str

    @property
    def pci_id_labels(self) -> tuple[str, ...]:
        return tuple(f"10de:{i:04x}" for i in self.pci_ids)


@record
class TorchRelease:
    """What one torch release (line, or patch release after overrides) needs from its toolchain."""

    version: str  # as asked: "1.7.1", or the line "1.7"
    line: str
    torchvision_map: tuple[tuple[str, tuple[str, ...]], ...]  # torch patch release -> torchvision releases
    python_min: str
    python_max: str
    cuda_min: str
    cuda_max: str | None
    gcc_min: str
    cudnn_min: str
    cudnn_max: str
    lowest_cc: ComputeCapability  # derived: what cuda_min can target, raised to cc_floor
    official_wheels: tuple[tuple[str, ComputeCapability], ...]  # cuda tag -> lowest SASS capability
    source: str
    unconfirmed: frozenset[str] = field(default_factory=frozenset)
    # package -> (torch patch release -> that package's releases): every package built against torch
    # whose map the row holds (torchvision, torchaudio), keyed by its name in srcbuild.packages
    paired_maps: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()

    def paired(self, package: str) -> tuple[str, ...]:
        """``package``'s releases made for this version (all of the line's when asked for the line)."""
        mapping = dict(dict(self.paired_maps).get(package, ()))
        if self.version in mapping:
            return mapping[self.version]
        return tuple(v for vs in mapping.values() for v in vs)

    @property
    def torchvision(self) -> tuple[str, ...]:
        """torchvision releases for this version (all of the line's when asked for the line)."""
        mapping = dict(self.torchvision_map)
        if self.version in mapping:
            return mapping[self.version]
        return tuple(tv for _, tvs in self.torchvision_map for tv in tvs)

    @property
    def wheels(self) -> dict[str, ComputeCapability]:
        return dict(self.official_wheels)

    def is_unconfirmed(self, fact: str) -> bool:
        return fact in self.unconfirmed


@record
class CudnnRelease:
    """Which CUDA builds of a cuDNN release exist and the lowest compute capability per CUDA major."""

    version: str
    cuda: tuple[str, ...]  # "10.2", or "11.x" for one build covering every 11 minor
    lowest_cc: tuple[tuple[int, ComputeCapability], ...]
    source: str
    unconfirmed: bool = False

    def has_build_for(self, cuda: str) -> bool:
        v = versions.parse(cuda)
        for build in self.cuda:
            if build.endswith(".x"):
                if v[0] == int(build.split(".")[0]):
                    return True
            elif versions.line(v) == versions.parse(build):
                return True
        return False

    def lowest_cc_for(self, cuda: str) -> ComputeCapability | None:
        return dict(self.lowest_cc).get(versions.parse(cuda)[0])


@record
class Breakage:
    """A known problem building an old torch tag on newer tools or a legacy GPU, and its fix."""

    id: str
    torch: str  # PEP 440 specifier
    trigger: str
    symptom: str
    fix: str
    action: str  # "pin" | "env" | "patch" | "toolchain"
    value: str
    source: str
    when_arch_below: ComputeCapability | None = None
    when_gcc: str | None = None
    when_cuda: str | None = None
    when_python: str | None = None
    when_cudnn: str | None = None
    when_torchvision: bool = False
    when_host: str | None = None  # "cmake>=4": a host tool; checked by build_pins / preflight
    patch: str | None = None  # a file under patches/ when srcbuild ships the fix
    handled: bool = False  # srcbuild applies the fix itself
    resolved_by_env: tuple[str, ...] = ()
    severity: str = "warning"
    unconfirmed: bool = False

    def affects_torch(self, torch_version: str) -> bool:
        return versions.matches(self.torch, torch_version)


@record
class ToolFloor:
    """A requirement of a range of torch (or torchvision) releases: a build tool of the build
    environment (stage "build"), or a run-time dependency's pin where the wheel is installed ("run")."""

    release: str  # PEP 440 specifier on the project's release
    requirement: str  # pip requirement, e.g. "cmake>=3.18"
    source: str
    project: str = "torch"  # or "torchvision"
    stage: str = "build"  # "build": the build environment; "run": wherever the wheel is installed


@record
class PinReason:
    what: str  # "setuptools<=59.5.0" or "CMAKE_POLICY_VERSION_MINIMUM=3.5"
    why: str
    source: str


@record
class BuildPins:
    """What the build environment of one torch tag needs: pip requirements and build variables."""

    pip: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    reasons: tuple[PinReason, ...]

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    def to_json(self) -> dict[str, object]:
        return {
            "pip": list(self.pip),
            "env": dict(self.env),
            "reasons": [{"what": r.what, "why": r.why, "source": r.source} for r in self.reasons],
        }


@record
class PipCommand:
    """How the official wheels of a range of torch releases are installed (``{torch}``, ``{tag}`` ...)."""

    torch: str  # PEP 440 specifier
    command: str
    source: str


@record
class WheelCaveat:
    """Something an official wheel lacks on older GPUs although it carries their kernels."""

    torch: str  # PEP 440 specifier
    tags: tuple[str, ...]  # CUDA tags of the wheels: "cu118"
    below_cc: ComputeCapability
    message: str
    source: str


@record
class RuntimeCaveat:
    """A torch feature that needs a newer GPU than torch itself (Triton behind torch.compile: 7.0)."""

    feature: str  # "torch.compile"
    below_cc: ComputeCapability
    message: str
    advice: str
    source: str
