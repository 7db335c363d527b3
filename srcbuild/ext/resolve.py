"""``ExtBuild``: every decision of one extension build, made once before anything runs.

The recipe's toolchain, compiler, build environment and provisioning are the ones its torch build
resolves (``srcbuild.resolve.resolve`` for package torch, the same host probe), so an extension is
compiled with exactly the nvcc and gcc the recipe's torch is. Of that build's variables an
extension keeps those ``torch.utils.cpp_extension`` reads (``KEPT_VARS``: the compiler, CUDA_HOME,
TORCH_CUDA_ARCH_LIST from ``gpu.arch``, MAX_JOBS from memory, PATH), then adds the package's own
(``ext.knowledge``), nvcc's ``--threads N`` where the package has a variable for extra nvcc flags
(``nvcc_threads``: N archs of one file compiled at once, for nvcc >= 11.2), and the recipe's
``[build] env``. N is the recipe's archs, capped so that MAX_JOBS files times N device compilers
stay within the jobs memory allows (``srcbuild.host.jobs``): ninja keeps the second core busy only
while a package's short C++ files last, and the threads fill it for the long ``.cu`` files
(docs/extensions.md has the measurement).

Which torch it builds against (``TorchChoice``): the wheel srcbuild built for the recipe (the
default, from the cache), a wheel file, an exact version fetched from the index pip is configured
with, or the torch already installed in ``--env``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from srcbuild.envmods import EnvChanges
from srcbuild.errors import UsageError
from srcbuild.ext.actions import FetchTorchWheel
from srcbuild.ext.knowledge import ExtensionKnowledge
from srcbuild.ext.source import ExtRequest, Sdist
from srcbuild.recipe import Recipe
from srcbuild.recipe.schema import override_note
from srcbuild.records import record
from srcbuild.resolve import ResolvedBuild

KEPT_VARS = frozenset({"PATH", "CC", "CXX", "CUDAHOSTCXX", "CUDA_HOME", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS"})
# nvcc's --threads (-t): "Specify the maximum number of threads to be created in parallel when
# compiling for multiple architectures" (nvcc 11.8.89's --help); nvcc before 11.2 lacks it
# (NVIDIA/apex setup.py, append_nvcc_threads: --threads only where CUDA >= 11.2).
NVCC_THREADS_SINCE = Version("11.2")


@record
class TorchChoice:
    """The torch an extension builds against."""

    kind: str  # "cache", "wheel", "index", "env"
    version: str  # the version pip pins ("2.0.1", "2.13.0+cpu"); for "cache" the recipe's torch wheel version
    wheel: Path | None = None  # "wheel": the file; "cache": the cached wheel; "index": where it is fetched to
    origin: str = ""

    @classmethod
    def from_wheel_file(cls, path: Path) -> TorchChoice:
        try:
            name, version, _build, _tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename as exc:
            raise UsageError(
                f"--torch-wheel {path}: not a wheel file name ({exc})", "pass a torch-*.whl file"
            ) from None
        if name != "torch":
            raise UsageError(f"--torch-wheel {path}: a wheel of {name}, not torch", "pass a torch-*.whl file")
        if not path.is_file():
            raise UsageError(f"--torch-wheel {path}: no such file", "check the path")
        return cls("wheel", str(version), path.resolve(), f"wheel {path}")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "version": self.version, "wheel": str(self.wheel) if self.wheel else None,
                "origin": self.origin}


@record
class ExtBuild:
    """One extension build for one recipe against one torch."""

    base: ResolvedBuild  # the recipe's torch build: toolchain, compiler, environment, findings
    request: ExtRequest
    knowledge: ExtensionKnowledge
    torch: TorchChoice
    sdist: Sdist | None  # an index request: the file and its sha256
    env_changes: EnvChanges
    options: tuple[str, ...]  # setup.py options
    root: Path  # the build's directory (logs, state, torch wheel, constraints, dist)
    torch_sha256: str = ""  # the torch wheel's sha256 (hex); empty for --env's torch
    fetch: FetchTorchWheel | None = None  # --torch VERSION: the plan's fetch-torch step downloads it

    @property
    def torch_marker(self) -> Path:
        """Where the build environment records the sha256 of the torch wheel installed into it."""
        return self.python.parent.parent / ".srcbuild-torch-wheel.sha256"

    @property
    def recipe(self) -> Recipe:
        return self.base.recipe

    @property
    def cuda(self) -> bool:
        return self.base.recipe.toolchain.cuda is not None

    @property
    def python(self) -> Path:
        return self.base.python

    @property
    def label(self) -> str:
        return f"{self.request.name} {self.sdist.version}" if self.sdist else str(self.request)

    @property
    def source_dir(self) -> Path:
        return self.root / "source"

    @property
    def dist_dir(self) -> Path:
        return self.root / "dist"

    @property
    def torch_dir(self) -> Path:
        return self.root / "torch-wheel"

    @property
    def constraints(self) -> Path:
        return self.root / "constraints.txt"

    @property
    def wheel_pattern(self) -> str:
        return f"{self.knowledge.module}-*.whl"


def nvcc_threads(base: ResolvedBuild, knowledge: ExtensionKnowledge, memory_jobs: int | None) -> int:
    """How many archs of one file nvcc compiles at once in this build (0: no --threads): the recipe's
    archs, at most MAX_JOBS and at most ``memory_jobs`` (the compile jobs this machine's memory
    allows; None: unknown, no threads) over MAX_JOBS, for a package with a variable for extra nvcc
    flags and nvcc >= 11.2."""
    if knowledge.nvcc_threads is None or base.recipe.toolchain.cuda is None or memory_jobs is None:
        return 0
    cuda = base.toolchain("cuda")
    try:
        if Version(cuda.version or cuda.pinned or "0") < NVCC_THREADS_SINCE:
            return 0
        jobs = int(base.env_changes.final_values().get("MAX_JOBS", "1"))
    except (InvalidVersion, ValueError):
        return 0
    threads = min(len(base.recipe.gpu.arch), jobs, memory_jobs // max(1, jobs))
    return threads if threads >= 2 else 0


def ext_variables(base: ResolvedBuild, knowledge: ExtensionKnowledge, memory_jobs: int | None) -> EnvChanges:
    """The variables of an extension build (see the module docstring); ``memory_jobs``: the compile
    jobs this machine's memory allows (None: unknown)."""
    cuda = base.recipe.toolchain.cuda is not None
    env = EnvChanges(tuple(c for c in base.env_changes if c.name in KEPT_VARS))
    if cuda:
        env = env.set("FORCE_CUDA", "1", "toolchain.cuda (compile the CUDA code without a GPU in the machine)")
    origin = f"{'known' if knowledge.known else 'generic'} extension {knowledge.name} ({knowledge.source})"
    for name, value in knowledge.env(cuda):
        env = env.set(name, value, origin)
    threads = nvcc_threads(base, knowledge, memory_jobs)
    if threads and knowledge.nvcc_threads is not None:
        env = env.set(knowledge.nvcc_threads.variable, f"--threads {threads}",
                      f"known extension {knowledge.name}: nvcc compiles {threads} of the "
                      f"{len(base.recipe.gpu.arch)} archs of each file at once (MAX_JOBS and memory cap it; "
                      f"{knowledge.nvcc_threads.source})")
    for name, value in base.recipe.build.env:
        env = env.set(name, value, "recipe [build] env" + override_note(name, value))
    return env
