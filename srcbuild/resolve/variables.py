"""The environment variables ``setup.py`` of each torch era and each package built against torch reads.

Sources (see the research notes, torch-build.md §1, §6, §7):
- ``TORCH_CUDA_ARCH_LIST``, ``USE_CUDA``, ``USE_CUDNN``, ``CUDNN_INCLUDE_DIR``/``CUDNN_LIB_DIR``,
  ``CUDA_HOME``, ``MAX_JOBS``, ``CMAKE_PREFIX_PATH``, ``BUILD_TEST``: the "Environment variables we
  respect" header of pytorch/pytorch:setup.py (v1.0, v1.3, v2.2).
- ``CUDNN_LIB_DIR`` is renamed to the CMake variable ``CUDNN_LIBRARY`` from v1.2
  (pytorch/pytorch:tools/setup_helpers/cmake.py), so both are set there.
- v1.0/v1.1 read ``NO_CUDA``/``NO_CUDNN``/``NO_TEST`` through ``hotpatch_var`` (setup.py@~1.0).
- 1.x hands ``CUDA_HOST_COMPILER`` to FindCUDA; ``CUDAHOSTCXX`` is only aliased in 2.x
  (tools/setup_helpers/cmake.py@2.x), so 1.x gets both.
- ``PYTORCH_BUILD_VERSION`` needs ``PYTORCH_BUILD_NUMBER`` (a hard assert in every era); NUMBER=1
  keeps the version free of a ``.post`` suffix.
- ``CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER`` reach CMake through the ``CMAKE_`` passthrough (>= 1.2).
- ``USE_MPI``: CMake option, passes through as a ``USE_`` variable (torch-build.md §2).
- ``MAGMA_HOME``: where torch's ``cmake/Modules/FindMAGMA.cmake`` looks for ``lib/libmagma`` and
  ``include/magma.h`` (``HINTS $ENV{MAGMA_HOME} /usr/local/magma``), in every era.
- A package built against the recipe's torch: what its registry entry names
  (``srcbuild.packages``: torchvision's ``FORCE_CUDA``, vision setup.py v0.5+; torchaudio's
  ``USE_CUDA``, audio tools/setup_helpers/extension.py), its version (``BUILD_VERSION``) and
  ``PYTORCH_VERSION``, the torch its wheel requires (both setup.py files read them).

Which releases read an era-specific variable is data: the ``[[variable_era]]`` rows of
``srcbuild/knowledge/data/build.toml`` (with these sources), and its ``[[package_variable]]`` rows
for the other packages (torchaudio's ``BUILD_SOX``, ``USE_FFMPEG``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.envmods import EnvChanges
from srcbuild.knowledge.build_facts import load_build_facts
from srcbuild.packages import PackageSpec, version_of_tag
from srcbuild.recipe import Recipe
from srcbuild.recipe.schema import override_note
from srcbuild.records import record
from srcbuild.resolve.eras import package_rows, release_era

if TYPE_CHECKING:
    from srcbuild.knowledge import KnowledgeBase

# What reaches CMake, for the stale-build-tree hash: the passthrough prefixes and the allow-list.
CMAKE_PREFIXES = ("USE_", "BUILD_", "CMAKE_", "NO_", "WITH_")
CMAKE_NAMES = (
    "TORCH_CUDA_ARCH_LIST",
    "CUDA_HOME",
    "CC",
    "CXX",
    "CUDAHOSTCXX",
    "CUDA_HOST_COMPILER",
    "CUDNN_INCLUDE_DIR",
    "CUDNN_LIB_DIR",
    "CUDNN_LIBRARY",
    "TORCH_NVCC_FLAGS",
    "FORCE_CUDA",
    "MAGMA_HOME",
)


# Variables of the caller's environment a build never inherits: a stray arch list or version of the
# user's shell would silently change the wheel. The executor drops them from the environment its
# commands start from; the shell plan unsets them first.
NOT_INHERITED = ("TORCH_CUDA_ARCH_LIST", "PYTORCH_BUILD_VERSION", "PYTORCH_BUILD_NUMBER", "BUILD_VERSION")


@record
class Toolset:
    """The compilers and directories the variables point at."""

    cc: str
    cxx: str
    cuda_home: str | None
    cudnn_root: str | None
    env_prefix: str
    max_jobs: int
    max_jobs_reason: str
    ccache: str | None  # the compiler launcher (sccache or ccache)
    launcher_env: tuple[tuple[str, str, str], ...] = ()  # (name, value, origin) of the compiler cache
    magma_home: str | None = None  # a provisioned MAGMA prefix (magma-cudaXY of the pytorch channel)
    cudnn_origin: str = "cuDNN found on this host"  # or "will be provisioned (route, size)"


def wheel_version(recipe: Recipe, tag: str) -> str:
    """The version a build of ``tag`` gets: ``1.7.1+cu92.sm30.mpi``."""
    return f"{version_of_tag(tag)}+{recipe.local_version()}"


def torch_variables(recipe: Recipe, tools: Toolset, kb: KnowledgeBase) -> EnvChanges:
    """The build variables of ``python setup.py bdist_wheel`` for the recipe's torch tag."""
    version = version_of_tag(recipe.torch.tag)
    era = release_era(version)
    facts = load_build_facts()  # which releases read which variable
    cuda = recipe.toolchain.cuda is not None
    env = EnvChanges()
    env = _common(env, recipe, tools)
    env = env.set("USE_CUDA", "1" if cuda else "0", "toolchain.cuda")
    cudnn = cuda and recipe.toolchain.cudnn is not None
    env = env.set("USE_CUDNN", "1" if cudnn else "0", "toolchain.cudnn")
    if cudnn and tools.cudnn_root:
        include, lib = str(Path(tools.cudnn_root) / "include"), str(Path(tools.cudnn_root) / "lib64")
        env = env.set("CUDNN_INCLUDE_DIR", include, f"toolchain.cudnn ({tools.cudnn_origin})")
        env = env.set("CUDNN_LIB_DIR", lib, f"toolchain.cudnn ({tools.cudnn_origin})")
        if facts.reads_variable("CUDNN_LIBRARY", era):
            env = env.set("CUDNN_LIBRARY", lib, "toolchain.cudnn (1.2+ reads CUDNN_LIBRARY)")
    if cuda and tools.magma_home:
        env = env.set("MAGMA_HOME", tools.magma_home, "toolchain magma (provisioned; torch's FindMAGMA reads it)")
    env = env.set("USE_MPI", "1" if recipe.mpi.enabled else "0", "mpi.enabled")
    env = env.set("BUILD_TEST", "0", "default: tests are not part of a wheel")
    env = env.set("CMAKE_PREFIX_PATH", tools.env_prefix, "build environment")
    env = env.set("PYTORCH_BUILD_VERSION", wheel_version(recipe, recipe.torch.tag), "torch.tag + local version")
    env = env.set("PYTORCH_BUILD_NUMBER", "1", "required with PYTORCH_BUILD_VERSION")
    if not cuda and facts.reads_variable("NO_CUDA", era):
        env = env.set("NO_CUDA", "1", "torch <= 1.1 reads NO_CUDA")
    if not cudnn and facts.reads_variable("NO_CUDNN", era):
        env = env.set("NO_CUDNN", "1", "torch <= 1.1 reads NO_CUDNN")
    if facts.reads_variable("NO_TEST", era):
        env = env.set("NO_TEST", "1", "torch <= 1.1 reads NO_TEST")
    if cuda and facts.reads_variable("CUDA_HOST_COMPILER", era):
        env = env.set("CUDA_HOST_COMPILER", tools.cxx, "compiler (torch 1.x hands it to FindCUDA)")
    if tools.ccache:
        name = Path(tools.ccache).name
        for lang in ("C", "CXX", "CUDA") if cuda else ("C", "CXX"):
            env = env.set(f"CMAKE_{lang}_COMPILER_LAUNCHER", tools.ccache, f"compiler cache ({name})")
        for var, value, origin in tools.launcher_env:
            env = env.set(var, value, origin)
    for name, value in _knowledge_pins_env(kb, version):
        env = env.set(name, value, "knowledge base (old tags)")
    for name, value in recipe.build.env:
        env = env.set(name, value, "recipe [build.env]" + override_note(name, value) + _consequence(name, value))
    return env


def against_torch_variables(spec: PackageSpec, recipe: Recipe, tools: Toolset, kb: KnowledgeBase) -> EnvChanges:
    """The build variables of a package built against the recipe's torch (torchvision, torchaudio):
    the common ones, what turns its CUDA code on without a GPU, its version, the torch it needs,
    and the variables the knowledge base says its release sets (``[[package_variable]]``)."""
    pin = spec.pin(recipe)
    env = _common(EnvChanges(), recipe, tools)
    if recipe.toolchain.cuda is not None:
        for name, value in spec.cuda_variables:
            env = env.set(name, value, "toolchain.cuda (no GPU needed at build time)")
    env = env.set(spec.version_variable, wheel_version(recipe, pin.tag), f"{spec.recipe_table}.tag + local version")
    env = env.set("PYTORCH_VERSION", wheel_version(recipe, recipe.torch.tag), "pins the torch this wheel needs")
    for row in package_rows(spec, recipe):
        env = env.set(row.name, row.value, f"knowledge base: {row.why}")
    for name, value in _knowledge_pins_env(kb, version_of_tag(recipe.torch.tag)):  # torch rows: torch's release
        env = env.set(name, value, "knowledge base (old tags)")
    return env


# what makes a package's build variables: (recipe, its tools, the knowledge base) -> variables
Variables = Callable[[Recipe, Toolset, "KnowledgeBase"], EnvChanges]


def variables_of(spec: PackageSpec) -> Variables:
    """The function that makes ``spec``'s build variables: torch's own, or those of a package
    built against the recipe's torch, from its registry entry."""
    if not spec.needs_torch_wheel:
        return torch_variables
    return functools.partial(against_torch_variables, spec)


def _common(env: EnvChanges, recipe: Recipe, tools: Toolset) -> EnvChanges:
    if recipe.toolchain.cuda is not None:
        env = env.set("TORCH_CUDA_ARCH_LIST", recipe.gpu.torch_cuda_arch_list, "gpu.arch (+PTX when gpu.ptx)")
        if tools.cuda_home:
            env = env.set("CUDA_HOME", tools.cuda_home, "toolchain.cuda")
            env = env.prepend("PATH", str(Path(tools.cuda_home) / "bin"), "toolchain.cuda (nvcc)")
        else:  # no toolkit of the pinned version: never build with whichever the caller's CUDA_HOME names
            env = env.unset("CUDA_HOME", "toolchain.cuda (no toolkit of this version found)")
    env = env.prepend("PATH", str(Path(tools.env_prefix) / "bin"), "build environment (its python, cmake, ninja)")
    reason = f" ({tools.max_jobs_reason})" if tools.max_jobs_reason else ""
    env = env.set("MAX_JOBS", str(tools.max_jobs), f"max_jobs{reason}")
    return env


def _knowledge_pins_env(kb: KnowledgeBase, torch_version: str) -> tuple[tuple[str, str], ...]:
    """Variables the knowledge base says a build with this torch release needs (e.g.
    CMAKE_POLICY_VERSION_MINIMUM). Its rows are keyed on torch's release, so a torchvision build
    asks with the recipe's torch, never with torchvision's own version number."""
    return tuple(kb.build_pins(torch_version).env)


def cmake_settings(env: EnvChanges) -> tuple[tuple[str, str], ...]:
    """The variables that reach CMake (hashed to detect a stale build tree)."""
    final = env.final_values()
    return tuple(sorted((k, v) for k, v in final.items() if k.startswith(CMAKE_PREFIXES) or k in CMAKE_NAMES))


def _consequence(name: str, value: str) -> str:
    """What a recipe's variable means for the wheel, where a user would not guess it."""
    if name == "USE_NCCL" and value == "0":
        return ": no NCCL in the wheel, so DDP is limited to gloo or MPI (docs/distributed.md)"
    return ""
