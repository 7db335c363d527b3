"""The wheel cache key: a contract. Changing anything here is a breaking change.

Two hashes name a cached wheel.

**Request fingerprint** (``srcbuild.resolve.key.build_fingerprint(resolved)``, i.e.
``fingerprint(key_inputs(resolved))`` of a ``srcbuild.resolve.ResolvedBuild``): the sha256 (hex) of the canonical JSON
(``json.dumps(..., sort_keys=True, separators=(",", ":"))``, UTF-8) of ``FingerprintInputs.to_json()``::

    {"schema": 2,                      # FINGERPRINT_SCHEMA; bump it on any change below
     "package": "torch",               # or "torchvision", "torchaudio" (srcbuild.packages)
     "source": {"tag": .., "repo": .., "commit": .. or null},   # the recipe's pin for the package
     "against": {"tag": .., "repo": .., "commit": ..} or null,  # a package built against torch: the torch pin
     "patches": [{"name": "torch/v1.7.1/0001-x.patch", "sha256": ..}, ...],  # in applying order
     "build_env": {"USE_NCCL": "0", ...},  # recipe [build] env, then the caller's variables (filtered)
     "python_abi": "cp38",
     "gcc": "7", "cuda": "9.2" or null, "cudnn": "7.6" or null,
     "mpi": {"implementation": "openmpi", "version": "4.1"} or null,
     "platform": "linux_x86_64",
     "sysroot": "2.17"}                # portable builds only (absent otherwise, see below)

The source is named by content where the recipe allows it: ``source.commit`` (and ``against.commit``)
is the commit the recipe pins for its tag, and every catalog recipe pins one for torch and
torchvision, so their fingerprints name the source commit and two sources never share one. A
recipe that pins no commit has ``null`` there; its entries of one fingerprint are still told apart
by the entry key, which names the measured commit of the source and of every submodule (below),
and on this machine its tag cannot name another commit than when first seen without
``--accept-moved-tag`` (``srcbuild.sources.tagpins``), so a build never stores a second source
under it. Adding commits to the catalog's recipes changed their fingerprints, not the schema.

The platform is the wheel platform tag without the C library: the glibc a wheel needs is a fact
about the built binary, not a request, so it is measured (``verify.symbols``) and recorded in the
manifest (``glibc_needed``), and a lookup picks the newest entry whose glibc the target machine
has (``cache.fit.Machine``). Schema 1 hashed ``linux_x86_64-glibc2.36`` and tied every wheel to
the distribution it was built on.

A portable build (``srcbuild.resolve.portable``) compiles against conda-forge's glibc sysroot
instead of the machine's C library, and its fingerprint carries ``"sysroot"``: the sysroot's glibc.
The key is absent from every other fingerprint, so adding it changed no existing fingerprint and the
schema stays 2; a portable and a non-portable build of the same pins never share a fingerprint.

It holds everything that changes the binary EXCEPT the compute capability list, and is computable
without git, a compiler or the network, so a lookup needs none of them. The arch list is left out
on purpose: a wheel built for 3.0+3.5 can serve a request for 3.0 (the store checks the kernels
measured in the wheel instead, see ``store.WheelCache.lookup``).

Build variables: the recipe's ``[build] env`` always counts. Variables the caller passes in
(``build_env``) count except those that cannot change the binary or are already hashed through
another field: the names in ``IGNORED_BUILD_VARS`` (parallelism, compiler launchers, version
strings that embed the arch list, variables srcbuild derives from recipe fields hashed above,
switches such as ``CMAKE_POLICY_VERSION_MINIMUM`` that only let a newer tool accept old sources), the
compiler cache's settings (every ``SCCACHE_*`` and ``CCACHE_*`` variable: where cached objects
live, never what they are) and any variable whose value is an absolute path (tool locations
differ between machines; the tool versions are hashed instead). Patches are keyed by content
(sha256), not by path. A torchvision fingerprint counts the patches under ``torchvision/``, a
torch one those under ``torch/`` (each package its ``patch_dir``); a patch outside every
package's directory counts for all.

**Entry key** (``entry_key(fp, resolved)``): the sha256 of the canonical JSON of
``{"fingerprint": fp, "resolved": resolved.to_json()}`` where ``ResolvedFacts`` are the exact facts
measured at build time: the resolved source commit, every submodule commit, the measured gcc and
nvcc versions and the compute capabilities built. Several entries can share a fingerprint (e.g. a
3.0 build and a 3.0+3.5 build); the manifest of each records both key inputs in full.

Precedent: conda-lock states its content hash as a contract the same way
(conda/conda-lock: conda_lock/content_hash.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from srcbuild.errors import UsageError
from srcbuild.files import sha256_file
from srcbuild.host.platform import host_platform_tag
from srcbuild.packages import package_spec
from srcbuild.recipe.model import Recipe, SourcePin
from srcbuild.records import record

FINGERPRINT_SCHEMA = 2

# Caller-passed variables that never enter the fingerprint (see the module docstring).
IGNORED_BUILD_VARS = frozenset(
    {
        # arch list and version labels that embed it: measured from the wheel instead
        "TORCH_CUDA_ARCH_LIST",
        "PYTORCH_BUILD_VERSION",
        "PYTORCH_BUILD_NUMBER",
        "BUILD_VERSION",
        "PYTORCH_VERSION",
        # parallelism and compiler launchers: same binary, different speed
        "MAX_JOBS",
        "CMAKE_BUILD_PARALLEL_LEVEL",
        "CMAKE_C_COMPILER_LAUNCHER",
        "CMAKE_CXX_COMPILER_LAUNCHER",
        "CMAKE_CUDA_COMPILER_LAUNCHER",
        "CCACHE_DIR",
        "CCACHE_BASEDIR",
        "CCACHE_COMPILERCHECK",
        "SCCACHE_DIR",
        "TORCH_NO_COMPILER_WRAPPER",
        # switches that let a newer tool accept old sources (set or not depending on the host's cmake)
        "CMAKE_POLICY_VERSION_MINIMUM",
        # functions of recipe fields already hashed (toolchain.cuda/cudnn, mpi.enabled, build.env)
        "USE_CUDA",
        "USE_CUDNN",
        "USE_MPI",
        "FORCE_CUDA",
        "NO_CUDA",
        "NO_CUDNN",
        "NO_DISTRIBUTED",
        "NO_TEST",
        "BUILD_TEST",
        # locations and per-user settings
        "PATH",
        "LD_LIBRARY_PATH",
        "LIBRARY_PATH",
        "CPATH",
        "HOME",
        "TMPDIR",
        "CC",
        "CXX",
        "CUDAHOSTCXX",
        "CUDA_HOST_COMPILER",
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDNN_INCLUDE_DIR",
        "CUDNN_LIB_DIR",
        "CUDNN_LIBRARY",
        "CMAKE_PREFIX_PATH",
        "MAGMA_HOME",
        "MPI_HOME",
    }
)


# The compiler cache's settings (srcbuild.compiler_cache): where objects are kept, not what they are.
COMPILER_CACHE_PREFIXES = ("SCCACHE_", "CCACHE_")


def python_abi_tag(python: str) -> str:
    """``"3.8"`` -> ``"cp38"`` (CPython, the only interpreter torch builds for)."""
    parts = python.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise UsageError(f"python version {python!r} is not of the form 3.8", "write toolchain.python as major.minor")
    return f"cp{parts[0]}{parts[1]}"


def canonical_json(data: Any) -> bytes:
    """The byte form every key hashes: sorted keys, no spaces, UTF-8."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _pin(pin: SourcePin | None) -> dict[str, Any] | None:
    if pin is None:
        return None
    return {"tag": pin.tag, "repo": pin.repo, "commit": pin.commit}


def filter_build_env(build_env: Mapping[str, str]) -> dict[str, str]:
    """The caller's variables that enter the fingerprint (see the module docstring)."""
    return {
        name: str(value)
        for name, value in build_env.items()
        if name not in IGNORED_BUILD_VARS
        and not name.startswith(COMPILER_CACHE_PREFIXES)
        and not os.path.isabs(str(value))
    }


@record
class FingerprintInputs:
    """Everything the request fingerprint hashes, as plain data."""

    package: str
    source: dict[str, Any] | None
    against: dict[str, Any] | None
    patches: tuple[tuple[str, str], ...]  # (name, sha256) in applying order
    build_env: tuple[tuple[str, str], ...]  # sorted
    python_abi: str
    gcc: str
    cuda: str | None
    cudnn: str | None
    mpi: tuple[str, str | None] | None  # (implementation, version) when enabled
    platform: str
    schema: int = FINGERPRINT_SCHEMA
    sysroot: str | None = None  # a portable build's sysroot glibc ("2.17"); None: the machine's own

    @classmethod
    def create(
        cls,
        recipe: Recipe,
        *,
        package: str,
        pin: SourcePin,
        against: SourcePin | None,
        patches: tuple[tuple[str, str], ...],
        build_env: Mapping[str, str],
        platform: str,
        sysroot: str | None = None,
    ) -> FingerprintInputs:
        """The inputs for building ``package`` with ``recipe``: its ``pin`` (and, for a package built
        against the recipe's torch, torch's pin ``against``), the (name, sha256) of each patch that
        changes its wheel, and the build variables that count (``filter_build_env``) over the
        recipe's own. ``srcbuild.resolve.key.key_inputs`` passes a resolved build's values."""
        env = dict(recipe.build.env)
        env.update(filter_build_env(build_env))
        mpi = (recipe.mpi.implementation, recipe.mpi.version) if recipe.mpi.enabled else None
        return cls(
            package=package,
            source=_pin(pin),
            against=_pin(against),
            patches=patches,
            build_env=tuple(sorted(env.items())),
            python_abi=python_abi_tag(recipe.toolchain.python),
            gcc=recipe.toolchain.gcc,
            cuda=recipe.toolchain.cuda,
            cudnn=recipe.toolchain.cudnn,
            mpi=mpi,
            platform=platform,
            sysroot=sysroot,
        )

    @classmethod
    def from_recipe(
        cls,
        recipe: Recipe,
        package: str,
        build_env: Mapping[str, str] | None = None,
        platform_tag: str | None = None,
        sysroot: str | None = None,
    ) -> FingerprintInputs:
        """The inputs for building ``package`` (a package of ``srcbuild.packages``) with ``recipe`` on this
        platform, from the recipe alone (a lookup that resolves nothing: ``resolve.request``); each
        patch that counts is hashed here. A build keys through ``resolve.key.key_inputs``."""
        spec = package_spec(package)
        return cls.create(
            recipe,
            package=package,
            pin=spec.pin(recipe),
            against=recipe.torch if spec.needs_torch_wheel else None,
            patches=tuple(
                (name, sha256_file(path))
                for name, path in zip(recipe.build.patches, recipe.build.patch_files)
                if spec.counts_patch(name)
            ),
            build_env=build_env or {},
            platform=platform_tag or host_platform_tag(),
            sysroot=sysroot,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "package": self.package,
            "source": self.source,
            "against": self.against,
            "patches": [{"name": n, "sha256": h} for n, h in self.patches],
            "build_env": dict(self.build_env),
            "python_abi": self.python_abi,
            "gcc": self.gcc,
            "cuda": self.cuda,
            "cudnn": self.cudnn,
            "mpi": {"implementation": self.mpi[0], "version": self.mpi[1]} if self.mpi else None,
            "platform": self.platform,
            **({"sysroot": self.sysroot} if self.sysroot else {}),
        }


def fingerprint(inputs: FingerprintInputs) -> str:
    """The request fingerprint: sha256 hex of the canonical JSON of ``inputs.to_json()``."""
    return hashlib.sha256(canonical_json(inputs.to_json())).hexdigest()


@record
class ResolvedFacts:
    """What the build measured: the exact inputs behind one entry of a fingerprint."""

    source_commit: str | None = None
    submodule_commits: tuple[tuple[str, str], ...] = ()  # (path, commit), sorted
    gcc_version: str | None = None
    nvcc_version: str | None = None
    arch: tuple[str, ...] = ()  # compute capabilities built, e.g. ("3.0", "3.5+PTX")
    extra: tuple[tuple[str, str], ...] = field(default=())  # other measured versions (mpi, cudnn)

    @classmethod
    def create(
        cls,
        source_commit: str | None = None,
        submodule_commits: Mapping[str, str] | None = None,
        gcc_version: str | None = None,
        nvcc_version: str | None = None,
        arch: Sequence[str] = (),
        extra: Mapping[str, str] | None = None,
    ) -> ResolvedFacts:
        return cls(
            source_commit=source_commit,
            submodule_commits=tuple(sorted((submodule_commits or {}).items())),
            gcc_version=gcc_version,
            nvcc_version=nvcc_version,
            arch=tuple(arch),
            extra=tuple(sorted((extra or {}).items())),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResolvedFacts:
        return cls.create(
            source_commit=data.get("source_commit"),
            submodule_commits=data.get("submodule_commits") or {},
            gcc_version=data.get("gcc_version"),
            nvcc_version=data.get("nvcc_version"),
            arch=data.get("arch") or (),
            extra=data.get("extra") or {},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source_commit": self.source_commit,
            "submodule_commits": dict(self.submodule_commits),
            "gcc_version": self.gcc_version,
            "nvcc_version": self.nvcc_version,
            "arch": list(self.arch),
            "extra": dict(self.extra),
        }


def entry_key(fp: str, resolved: ResolvedFacts) -> str:
    """The entry key: sha256 hex of ``{"fingerprint": fp, "resolved": resolved.to_json()}``."""
    return hashlib.sha256(canonical_json({"fingerprint": fp, "resolved": resolved.to_json()})).hexdigest()
