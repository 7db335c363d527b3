"""``ResolvedBuild``: every decision one build needs, frozen, each with where it came from.

Origins rank ``default < recipe < environment < command line < host probe``: a later source
overrides an earlier one (``Origin``). ``srcbuild.resolve.resolve`` makes this object from the
recipe, the options, the host facts and the knowledge base; the planner
(``srcbuild.plan.make_plan``) turns it into steps without deciding anything again, and the cache
key (``srcbuild.cache.key.key_inputs``) hashes its binary inputs.
"""

from __future__ import annotations

import enum
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srcbuild.compiler_cache import CompilerCacheConfig
from srcbuild.envmods import EnvChanges
from srcbuild.findings import Finding, Severity
from srcbuild.packages import PackageSpec
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, SourcePin
from srcbuild.records import record
from srcbuild.resolve.compiler import AlternativesTree
from srcbuild.resolve.inputs import BuildOptions

if TYPE_CHECKING:
    from srcbuild.envs.spec import EnvSpec
    from srcbuild.sources.mirrors import MirrorRules
    from srcbuild.toolchain.planned import PlannedProvision


class Origin(enum.IntEnum):
    """Where a value came from; a higher origin overrides a lower one."""

    DEFAULT = 0
    RECIPE = 1
    ENVIRONMENT = 2
    COMMAND_LINE = 3
    HOST_PROBE = 4

    @classmethod
    def of(cls, source: str) -> Origin:
        """The origin a printed source names: "environment MAX_JOBS" -> ENVIRONMENT."""
        for prefix, origin in (
            ("recipe", cls.RECIPE),
            ("environment", cls.ENVIRONMENT),
            ("command line", cls.COMMAND_LINE),
            ("host probe", cls.HOST_PROBE),
        ):
            if source.startswith(prefix):
                return origin
        return cls.DEFAULT


@record
class Setting:
    """One resolved build setting and where its value came from."""

    name: str
    value: str
    source: str  # "default", "recipe <file>", "environment VAR", "command line --opt", "host probe"
    why: str = ""

    @property
    def origin(self) -> Origin:
        return Origin.of(self.source)

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "source": self.source, "why": self.why}


class Provider(str, enum.Enum):
    """Who provides a toolchain piece. New providers (a provisioned toolchain) are new members."""

    HOST = "host"  # installed on this machine, found by the host probe
    PROVISIONED = "provisioned"  # fetched by `srcbuild toolchain install` into srcbuild's own prefixes
    ENVIRONMENT = "environment"  # the build environment installs it (recipe [env] conda, or its Python)
    NONE = "none"  # the recipe does not use it
    MISSING = "missing"  # the recipe needs it and nobody provides it (a host finding says so)


@record
class Toolchain:
    """One toolchain piece of the build: Python, gcc, g++, CUDA, cuDNN, MPI or NCCL."""

    name: str  # "python", "gcc", "g++", "cuda", "cudnn", "mpi", "nccl"
    pinned: str | None  # the version the recipe asks for (None: not pinned / not used)
    version: str | None  # the version found (None: not found or not probed)
    path: Path | None  # the program, home or root directory
    provider: Provider
    source: str  # where the path came from ("host probe (CUDA_HOME: nvcc 11.8.89)", "command line --cuda-home")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pinned": self.pinned,
            "version": self.version,
            "path": str(self.path) if self.path else None,
            "provider": self.provider.value,
            "source": self.source,
        }


@record
class ResolvedPatch:
    """One of the recipe's patches, by content."""

    name: str  # "torch/v1.7.1/0001-x.patch", as the recipe lists it
    path: Path
    sha256: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "path": str(self.path), "sha256": self.sha256}


@record
class ResolvedEnv:
    """The build environment: an existing one (``--env``), or one a backend makes from ``spec``."""

    prefix: Path  # --env's prefix, or the stable link the made environment is reached through
    python: str  # the recipe's Python version
    existing: bool  # --env: used as it is, never made
    source: str
    backend: str | None = None  # "venv", "conda", "mamba", "micromamba", "rattler"; None: existing or impossible
    executable: str | None = None  # the conda-family tool's path
    spec: EnvSpec | None = None
    lockfile: Path | None = None  # recipes/R.conda-lock.yml: installed exactly, no solve
    envs_dir: Path | None = None
    description: tuple[str, ...] = ()  # what the backend will do, for the plan
    target: Path | None = None  # where the backend makes it (content-addressed; ``prefix`` links to it)
    create_shell: tuple[tuple[str, ...], ...] = ()  # argv of each command that makes ``target`` by hand
    error: tuple[str, str] | None = None  # (message, hint): no backend can make it on this host

    def to_json(self) -> dict[str, Any]:
        return {
            "prefix": str(self.prefix),
            "python": self.python,
            "existing": self.existing,
            "source": self.source,
            "backend": self.backend,
            "spec_hash": self.spec.key if self.spec is not None else None,
            "lockfile": str(self.lockfile) if self.lockfile else None,
            "error": list(self.error) if self.error else None,
        }


@record
class CompilerChoice:
    """The gcc the build selects and the alternatives tree it is selected in."""

    major: str
    gcc: Path
    gxx: Path
    tree: AlternativesTree
    system: bool  # --system-alternatives: the system's database, restored afterwards


@record
class Portable:
    """A portable build: compiled against the sysroot of ``glibc``, its wheel retagged ``manylinux``."""

    glibc: str  # "2.17": the sysroot's glibc; a wheel needing newer fails verification
    sysroot: Path | None  # the sysroot beside the compiler (None: no such compiler, a finding says so)
    python: str  # the interpreter that runs ``python -m wheel tags`` (srcbuild's own)
    source: str  # where "portable" came from

    def to_json(self) -> dict[str, Any]:
        return {
            "glibc": self.glibc,
            "sysroot": str(self.sysroot) if self.sysroot else None,
            "source": self.source,
        }


@record
class ResolvedBuild:
    """Every decision of one build of ``package`` for ``recipe``; made once, never re-made downstream."""

    recipe: Recipe
    package: PackageSpec
    pin: SourcePin
    options: BuildOptions
    paths: Paths
    settings: tuple[Setting, ...]
    toolchains: tuple[Toolchain, ...]
    compiler: CompilerChoice
    environment: ResolvedEnv
    mirrors: MirrorRules  # parsed once
    patches: tuple[ResolvedPatch, ...]  # every patch of the recipe, in applying order
    env_changes: EnvChanges  # the build variables (compiler last, so its bin dir is first on PATH)
    max_jobs: int
    max_jobs_reason: str
    keep_build: bool
    checkout: Path
    build_root: Path
    version: str  # the wheel version: "1.7.1+cu92.sm30"
    platform: str  # the wheel platform tag (no C library: see srcbuild.cache.key)
    findings: tuple[Finding, ...]  # the compatibility rules', then the host rules'
    rule_count: int  # how many of ``findings`` come from the compatibility rules
    unlisted_arches: tuple[str, ...] = ()  # archs torch's cpp_extension never lists (torchvision adds them)
    unlisted_source: str = ""  # where that fact comes from
    compiler_cache: CompilerCacheConfig = field(default_factory=CompilerCacheConfig)  # the launcher
    provisioning: tuple[PlannedProvision, ...] = ()  # run before the compiler step
    portable: Portable | None = None  # None: the wheel is built for this machine's glibc

    @property
    def rule_findings(self) -> tuple[Finding, ...]:
        return self.findings[: self.rule_count]

    @property
    def host_findings(self) -> tuple[Finding, ...]:
        return self.findings[self.rule_count :]

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)

    @property
    def applied_patches(self) -> tuple[ResolvedPatch, ...]:
        """The patches this package's tree gets."""
        return self.patches if self.package.applies_recipe_patches else ()

    def toolchain(self, name: str) -> Toolchain:
        return next(t for t in self.toolchains if t.name == name)

    @property
    def python(self) -> Path:
        """The build environment's python."""
        return self.environment.prefix / "bin" / "python"

    @property
    def dist_dir(self) -> Path:
        return self.checkout / "dist"

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe.name,
            "package": self.package.name,
            "version": self.version,
            "source": {"repo": self.pin.repo, "tag": self.pin.tag, "commit": self.pin.commit},
            "settings": [s.to_json() for s in self.settings],
            "toolchains": [t.to_json() for t in self.toolchains],
            "environment": self.environment.to_json(),
            "mirrors": self.mirrors.to_json(),
            "patches": [p.to_json() for p in self.patches],
            "platform": self.platform,
            "findings": [f.to_json() for f in self.findings],
            "provisioning": [p.to_json() for p in self.provisioning],
            "portable": self.portable.to_json() if self.portable else None,
        }
