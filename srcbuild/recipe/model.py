"""The recipe as written and validated: frozen dataclasses, one per TOML table.

A ``Recipe`` pins one build. It is what ``load_recipe`` returns after ``extends`` has been merged
and every value has been checked; nothing here depends on the machine. Turning it into concrete
paths, commits and commands is the planner's job.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any

from srcbuild.capability import ComputeCapability
from srcbuild.packages import PACKAGES, SourcePin
from srcbuild.records import record


@record
class Toolchain:
    """Versions of the tools the build uses. ``cuda`` is None for a CPU-only build."""

    python: str
    gcc: str
    cuda: str | None
    cudnn: str | None = None


@record
class Gpu:
    """Compute capabilities to compile for; ``ptx`` also embeds PTX for the highest one."""

    arch: tuple[ComputeCapability, ...] = ()
    ptx: bool = False

    @property
    def torch_cuda_arch_list(self) -> str:
        """The ``TORCH_CUDA_ARCH_LIST`` value: ``"3.5;3.7+PTX"``."""
        items = [str(cc) for cc in sorted(self.arch)]
        if self.ptx and items:
            items[-1] += "+PTX"
        return ";".join(items)


@record
class Mpi:
    enabled: bool = False
    implementation: str = "openmpi"
    version: str | None = None


@record
class Build:
    """Extra build variables and patches (paths relative to a patches directory)."""

    env: tuple[tuple[str, str], ...] = ()
    patches: tuple[str, ...] = ()
    patch_files: tuple[Path, ...] = ()  # the same patches, found on disk
    allow_env_override: bool = False  # env may set PATH, LD_PRELOAD, ... (schema.RUNTIME_ENV_NAMES)
    compiler_cache: str | None = None  # sccache, ccache or none (None: the default)
    portable: bool | None = None  # build against an old glibc sysroot, tag manylinux (None: not set)

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)


@record
class EnvTable:
    """Additions to the build environment: conda packages, channels, pip packages."""

    conda: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()


@record
class ExtensionPin:
    """One ``[[extensions]]`` entry: what ``srcbuild ext --recipe R --all`` builds."""

    name: str
    version: str | None = None
    git: str | None = None  # URL@TAG or URL@COMMIT

    @property
    def requirement(self) -> str:
        """What ``srcbuild ext`` takes: ``name==version``, ``name``, or ``git+URL@REF``."""
        if self.git:
            return self.git if self.git.startswith("git+") else f"git+{self.git}"
        return f"{self.name}=={self.version}" if self.version else self.name

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in (("name", self.name), ("version", self.version), ("git", self.git)) if v}


@record
class Recipe:
    """One fully merged and validated recipe."""

    name: str
    description: str
    torch: SourcePin
    toolchain: Toolchain
    # the pins of the other packages of ``srcbuild.packages`` (torchvision, torchaudio), by their
    # recipe table, in the registry's order
    pins: tuple[tuple[str, SourcePin], ...] = ()
    gpu: Gpu = field(default_factory=Gpu)
    mpi: Mpi = field(default_factory=Mpi)
    build: Build = field(default_factory=Build)
    env: EnvTable = field(default_factory=EnvTable)
    extensions: tuple[ExtensionPin, ...] = ()  # [[extensions]], built in order by srcbuild ext --all
    path: Path | None = None  # the file it was read from
    extends: tuple[str, ...] = ()  # parent chain, nearest first
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # merged TOML

    def pin_of(self, table: str) -> SourcePin | None:
        """The pin of the recipe table ``table`` (``torch``, ``torchvision``, ...), or None."""
        if table == "torch":
            return self.torch
        return dict(self.pins).get(table)

    @property
    def cuda_tag(self) -> str:
        """``cu92`` / ``cu118`` / ``cpu``: the CUDA part of a wheel's local version."""
        if self.toolchain.cuda is None:
            return "cpu"
        major, minor = self.toolchain.cuda.split(".")[:2]
        return f"cu{major}{minor}"

    def local_version(self) -> str:
        """The local version label naming this build: ``cu92.sm30.mpi``."""
        parts = [self.cuda_tag]
        if self.toolchain.cuda is not None:
            parts.extend(f"sm{cc.sm}" for cc in sorted(self.gpu.arch))
        if self.mpi.enabled:
            parts.append("mpi")
        return ".".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The merged recipe as plain data (what ``recipes show --json`` prints)."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "path": str(self.path) if self.path else None,
            "extends": list(self.extends),
            "torch": _pin_json(self.torch),
            **{
                spec.recipe_table: _pin_json(pin) if (pin := self.pin_of(spec.recipe_table)) else None
                for spec in PACKAGES.values()
                if spec.recipe_table != "torch"
            },
            "toolchain": {
                "python": self.toolchain.python,
                "gcc": self.toolchain.gcc,
                "cuda": self.toolchain.cuda or "none",
                "cudnn": self.toolchain.cudnn,
            },
            "gpu": {"arch": [str(c) for c in self.gpu.arch], "ptx": self.gpu.ptx},
            "mpi": {
                "enabled": self.mpi.enabled,
                "implementation": self.mpi.implementation,
                "version": self.mpi.version,
            },
            "build": {
                "env": dict(self.build.env),
                "patches": list(self.build.patches),
                "allow_env_override": self.build.allow_env_override,
                **({"portable": self.build.portable} if self.build.portable is not None else {}),
            },
            "env": {
                "conda": list(self.env.conda),
                "channels": list(self.env.channels),
                "pip": list(self.env.pip),
            },
        }
        if self.extensions:  # absent otherwise, so existing recipes print and store as before
            out["extensions"] = [e.to_json() for e in self.extensions]
        return out


def _pin_json(pin: SourcePin) -> dict[str, Any]:
    return {"tag": pin.tag, "commit": pin.commit, "repo": pin.repo}
