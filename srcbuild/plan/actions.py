"""The work a step does beyond running commands, as typed data: what to do, never how.

Each action is frozen data made by the planner: ``describe()`` is the line ``srcbuild plan`` shows,
``args()`` its inputs in the JSON plan, ``shell()`` the equivalent bash lines for
``--format shell`` (empty where there is none: srcbuild's own checks become a comment). The
executor looks up what to do by the action's type (``srcbuild.execute.registry``); nothing here
runs a process or reads the disk.

A ``SkipCondition`` names a question the executor asks first (its handler is looked up by type
too): a step whose work is already on disk is skipped, and the executor prints the ``reason``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from srcbuild.command import Command
from srcbuild.compiler_cache import CompilerCacheConfig
from srcbuild.records import record
from srcbuild.sources.patches import PatchSet
from srcbuild.sources.sync import SourceSync

if TYPE_CHECKING:
    from srcbuild.canary.readout import Expect
    from srcbuild.knowledge.canary import CanaryUnit
    from srcbuild.toolchain.planned import PlannedProvision


class Action:
    """The base of every internal action; subclasses are frozen dataclasses."""

    name: ClassVar[str] = ""
    runs_commands: ClassVar[bool] = False  # True: its handler decides which of the step's commands run

    def describe(self) -> str:
        raise NotImplementedError

    def args(self) -> dict[str, str]:
        return {}

    def shell(self) -> tuple[str, ...]:
        return ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.describe(), "args": self.args(), "shell": list(self.shell())}


@record
class Preflight(Action):
    """Show the resolved build's rule and host findings; stop when they say the build cannot work."""

    name: ClassVar[str] = "preflight"
    recipe: str
    package: str
    ignore: bool

    def describe(self) -> str:
        what = f"check recipe {self.recipe} and this host for a {self.package} build"
        return what + (" (--ignore-preflight: errors are reported, the build goes on)" if self.ignore else "")

    def args(self) -> dict[str, str]:
        return {"ignore": "1" if self.ignore else ""}


@record
class TorchWheel(Action):
    """The torch of a package built against it (torchvision, torchaudio): the recipe's torch wheel
    from the cache, built first when missing."""

    name: ClassVar[str] = "torch-wheel"
    recipe: str
    dest: Path

    def describe(self) -> str:
        return f"find (or build) torch for {self.recipe} and copy it to {self.dest}"

    def args(self) -> dict[str, str]:
        return {"dest": str(self.dest)}


@record
class SyncSources(Action):
    """Run the sources step's commands a checkout on disk still needs, under the object cache's lock."""

    name: ClassVar[str] = "sync-sources"
    runs_commands: ClassVar[bool] = True
    sync: SourceSync

    def describe(self) -> str:
        return f"run the commands below that {self.sync.checkout} still needs (all of them on a first build)"


@record
class VerifySources(Action):
    name: ClassVar[str] = "verify-sources"
    sync: SourceSync

    def describe(self) -> str:
        return "compare the checked-out commit with the recipe's pin; check every submodule is present"

    def args(self) -> dict[str, str]:
        pin = self.sync.pin
        return {"checkout": str(self.sync.checkout), "commit": pin.commit or "", "tag": pin.tag}


@record
class ApplyPatches(Action):
    """Refuse a checkout holding patches the recipe no longer asks for, then run the patches step's
    commands (each skips a patch already recorded), naming the patch that does not apply."""

    name: ClassVar[str] = "apply-patches"
    runs_commands: ClassVar[bool] = True
    patches: PatchSet

    def describe(self) -> str:
        return (
            f"check that {self.patches.checkout} holds no patch the recipe no longer asks for, "
            "then run the commands below"
        )

    def args(self) -> dict[str, str]:
        return {"checkout": str(self.patches.checkout)}


@record
class CheckEnv(Action):
    """--env: the existing environment must run the recipe's Python."""

    name: ClassVar[str] = "check-env"
    prefix: Path
    python: str
    shell_lines: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"check {self.prefix}/bin/python is Python {self.python}"

    def args(self) -> dict[str, str]:
        return {"prefix": str(self.prefix), "python": self.python}

    def shell(self) -> tuple[str, ...]:
        return self.shell_lines


@record
class EnsureEnv(Action):
    """Make (or reuse) the environment the resolved build chose, with the backend it chose."""

    name: ClassVar[str] = "ensure-env"
    backend: str
    link: Path
    lockfile: Path | None
    described: str
    shell_lines: tuple[str, ...] = ()
    error: str = ""  # no backend can make it here: the build stops with these words
    hint: str = ""

    def describe(self) -> str:
        return f"cannot: {self.error}" if self.error else self.described

    def args(self) -> dict[str, str]:
        if self.error:
            return {"backend": "", "link": str(self.link), "error": self.error, "hint": self.hint}
        return {"backend": self.backend, "link": str(self.link), "lockfile": str(self.lockfile or "")}

    def shell(self) -> tuple[str, ...]:
        return self.shell_lines


@record
class Provision(Action):
    """Fetch the toolchain pins the host lacks into srcbuild's toolchains directory (or reuse them)."""

    name: ClassVar[str] = "provision"
    planned: tuple[PlannedProvision, ...]

    def describe(self) -> str:
        return "; ".join(p.describe() for p in self.planned)

    def args(self) -> dict[str, str]:
        return {p.offer.request.tool: str(p.prefix) for p in self.planned}

    def shell(self) -> tuple[str, ...]:
        return tuple(p.command() for p in self.planned)


@record
class CheckBuildTree(Action):
    """A build tree configured with other CMake settings is cleaned instead of reused."""

    name: ClassVar[str] = "check-build-tree"
    digest: str
    hash_file: Path
    cache: Path
    shell_lines: tuple[str, ...] = ()
    cleanup: tuple[Command, ...] = ()  # what cleans a stale tree (the build step's own cleanup)

    def describe(self) -> str:
        return f"compare the settings hash {self.digest} with the one stored beside the build tree; clean on a mismatch"

    def args(self) -> dict[str, str]:
        return {"hash": self.digest, "hash_file": str(self.hash_file), "cache": str(self.cache)}

    def shell(self) -> tuple[str, ...]:
        return self.shell_lines


@record
class Canary(Action):
    """Configure the build tree for real (the torch era's CMake-only ``setup.py`` run), compare
    what CMake decided with the plan, then compile the canary units through torch's own ninja
    targets and read their device code; timed. ``skip`` says why it does nothing (``--no-canary``,
    or an era without a canary row): the step stays in the plan and in the build's record."""

    name: ClassVar[str] = "canary"
    configure: Command | None
    build_dir: Path
    reconfigure: Command | None = None  # forces CMake in an existing tree whose summary was not kept
    units: tuple[CanaryUnit, ...] = ()
    expects: tuple[Expect, ...] = ()
    arch_list: str = ""  # TORCH_CUDA_ARCH_LIST: what each device unit must hold
    skip: str = ""

    def describe(self) -> str:
        if self.skip:
            return f"skipped: {self.skip}"
        what = f"configure {self.build_dir} for real, check {len(self.expects)} CMake decisions against the plan"
        if self.units:
            what += f", compile {len(self.units)} canary unit(s) through ninja"
            if self.arch_list:
                what += f" and read their kernels for {self.arch_list}"
        return what

    def args(self) -> dict[str, str]:
        return {
            "build_dir": str(self.build_dir),
            "skip": self.skip,
            "arch_list": self.arch_list,
            "units": " ".join(u.outputs[0] for u in self.units),
            "expects": " ".join(e.key for e in self.expects),
        }

    def shell(self) -> tuple[str, ...]:
        if self.skip or self.configure is None:
            return ()
        q = shlex.quote
        cwd = self.configure.cwd or self.build_dir.parent
        # in a subshell with the build's environment (TORCH_CUDA_ARCH_LIST, the compiler's PATH, ...),
        # as the build step's command has it
        lines = [f"cd {q(str(cwd))}", *self.configure.env.shell_lines(), self.configure.shell()]
        tree = q(str(self.build_dir))
        # the first target ending in each output name, tried in order (find_output's rule), compared
        # as strings: an output name is no awk regex (its '/' would end one)
        pick = (
            "BEGIN { n = split(want, w, \" \") } { t[NR] = $1 } "
            "END { for (i = 1; i <= n; i++) for (j = 1; j <= NR; j++) "
            "if (t[j] == w[i] || substr(t[j], length(t[j]) - length(w[i])) == \"/\" w[i]) { print t[j]; exit } }"
        )
        for unit in self.units:
            lines.append(
                f"ninja -C {tree} \"$(ninja -C {tree} -t targets all | "
                f"awk -F': ' -v want={q(' '.join(unit.outputs))} {q(pick)})\""
            )
        return ("(", *(f"  {line}" for line in lines), ")")


@record
class CheckLocalChanges(Action):
    """Compare the checkout and its submodules with the tag plus the recipe's patches."""

    name: ClassVar[str] = "check-local-changes"
    sync: SourceSync
    patches: tuple[Path, ...]

    def describe(self) -> str:
        return f"compare {self.sync.checkout} and its submodules with the tag plus the recipe's patches"

    def args(self) -> dict[str, str]:
        return {"checkout": str(self.sync.checkout)}


@record
class CompilerCacheStart(Action):
    """Start the compiler cache with the build's settings and keep its counters (see ``compiler_cache``)."""

    name: ClassVar[str] = "compiler-cache-start"
    config: CompilerCacheConfig

    def describe(self) -> str:
        return f"start {self.config.label()} and read its counters"

    def args(self) -> dict[str, str]:
        return {"kind": self.config.kind, "url": self.config.url or "", "dist": self.config.dist_scheduler or ""}


@record
class CompilerCacheStats(Action):
    """Read the compiler cache's counters after the build: the result's hits and misses."""

    name: ClassVar[str] = "compiler-cache-stats"
    config: CompilerCacheConfig

    def describe(self) -> str:
        return f"read the counters of {self.config.label()}"

    def args(self) -> dict[str, str]:
        return {"kind": self.config.kind}


@record
class VerifyWheel(Action):
    name: ClassVar[str] = "verify-wheel"
    dist: Path
    pattern: str

    def describe(self) -> str:
        return f"check {self.pattern} against the recipe's archs"

    def args(self) -> dict[str, str]:
        return {"dist": str(self.dist), "pattern": self.pattern}


@record
class RetagWheel(Action):
    """A portable build's wheel gets the ``manylinux_X_Y`` tag its symbol versions allow
    (``verify.manylinux.wheel_platform_tag``), written by ``python -m wheel tags`` (WHEEL and RECORD)."""

    name: ClassVar[str] = "retag-wheel"
    dist: Path
    pattern: str
    python: str  # an interpreter with srcbuild and wheel installed

    def describe(self) -> str:
        return f"retag {self.pattern} manylinux_X_Y from its ELF symbol versions (python -m wheel tags)"

    def args(self) -> dict[str, str]:
        return {"dist": str(self.dist), "pattern": self.pattern, "python": self.python}

    def shell(self) -> tuple[str, ...]:
        q = shlex.quote
        py = q(self.python)
        tag = "from srcbuild.verify.manylinux import wheel_platform_tag as t; import pathlib, sys; "
        tag += "print(t(pathlib.Path(sys.argv[1])))"
        return (
            f"wheel=$(ls -t {q(str(self.dist))}/{self.pattern} | head -n 1)",
            f'tag=$({py} -c {q(tag)} "$wheel")',
            f'{py} -m wheel tags --platform-tag "$tag" --remove "$wheel"',
        )


@record
class CacheWheel(Action):
    name: ClassVar[str] = "cache-wheel"
    dist: Path
    pattern: str
    cache_dir: Path
    sync: SourceSync | None = None  # the checkout, looked at again for edits made during the build
    patches: tuple[Path, ...] = ()
    build_log: Path | None = None  # stored beside the wheel

    def describe(self) -> str:
        return f"store the wheel and its manifest under {self.cache_dir}"

    def args(self) -> dict[str, str]:
        return {"dist": str(self.dist), "pattern": self.pattern}


class SkipCondition:
    """A question asked before a step runs: True means its work is already on disk."""

    name: ClassVar[str] = ""
    reason: ClassVar[str] = ""


@record
class SourcesComplete(SkipCondition):
    name: ClassVar[str] = "sources-complete"
    reason: ClassVar[str] = "the checkout is already at the tag with every submodule (its build tree is kept)"
    sync: SourceSync


@record
class PatchesApplied(SkipCondition):
    name: ClassVar[str] = "patches-applied"
    reason: ClassVar[str] = "every patch is already applied to the checkout"
    patches: PatchSet
