"""The GPU kernels a provisioned cuDNN or NCCL carries, read from its libraries, and whether they
run on a recipe's GPUs.

``scan_prefix`` reads every shared library under a prefix's ``lib64``/``lib`` with srcbuild's
fat-binary reader (``srcbuild.verify.fatbin``: the ``.nv_fatbin`` headers only, never the
payloads) and returns the compute capabilities with SASS and with PTX; the provisioning records
them in the prefix's manifest (``sass``, ``ptx``) and ``toolchain ls`` shows them.
``check_runs`` refuses (exit 3) a prefix with no kernel for one of the recipe's compute
capabilities, naming the library, what it holds, and the versions srcbuild's data knows to cover
the capability.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from srcbuild.capability import ComputeCapability
from srcbuild.errors import IncompatibleError
from srcbuild.records import record
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.verify.kernels import Kernels, covers, sm_list, sm_text

LABELS = {"cudnn": "cuDNN", "nccl": "NCCL"}


@record
class Scanned:
    """The kernels of a prefix's libraries: all of them together, and which libraries hold any."""

    kernels: Kernels
    libraries: tuple[str, ...]  # the file names holding device code

    def facts(self) -> dict[str, str]:
        """What the manifest records: ``{"sass": "3.5,5.0", "ptx": "7.0", "kernel_libraries": ...}``."""
        return {
            "sass": ",".join(sm_list(self.kernels.sass)),
            "ptx": ",".join(sm_list(self.kernels.ptx)),
            "kernel_libraries": ",".join(self.libraries),
        }


def _libraries(prefix: Path) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for directory in (prefix / "lib64", prefix / "lib"):
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("lib*.so*")):
            real = path.resolve()
            if path.is_symlink() or real in seen or not real.is_file():
                continue
            seen.add(real)
            out.append(path)
    return out


def scan_prefix(prefix: Path) -> Scanned:
    """Read the kernels of every shared library of ``prefix`` (``VerificationFailed`` for a library
    that is not ELF)."""
    from srcbuild.verify.fatbin import count_entries  # read only after a fetch, not at import

    total = Kernels()
    holding = []
    for library in _libraries(prefix):
        kernels = Kernels.from_entries(count_entries(library))
        if not kernels.empty:
            holding.append(library.name)
        total = total | kernels
    return Scanned(total, tuple(holding))


def recorded(facts: dict[str, str]) -> Kernels | None:
    """The kernels a manifest recorded, or None when it recorded none (made before scanning)."""
    if "sass" not in facts:
        return None
    sass = frozenset(ComputeCapability.parse(a).sm for a in facts["sass"].split(",") if a)
    ptx = frozenset(ComputeCapability.parse(a).sm for a in facts.get("ptx", "").split(",") if a)
    return Kernels(sass, ptx)


def check_runs(
    tool: str,
    version: str,
    prefix: Path,
    kernels: Kernels,
    libraries: Sequence[str],
    archs: Sequence[str],
    data: ToolchainFacts,
) -> None:
    """An ``IncompatibleError`` (exit 3) when a GPU of one of ``archs`` runs none of ``kernels``."""
    uncovered = [a for a in archs if not covers(kernels, ComputeCapability.parse(a))]
    if not uncovered:
        return
    label = LABELS.get(tool, tool)
    first = ComputeCapability.parse(uncovered[0])
    covering = [
        w.version
        for w in data.index_wheels
        if w.tool == tool
        and covers(
            Kernels(
                frozenset(ComputeCapability.parse(a).sm for a in w.sass),
                frozenset(ComputeCapability.parse(a).sm for a in w.ptx),
            ),
            first,
        )
    ]
    libs = ", ".join(libraries) or "no library with device code"
    held = f"SASS {sm_text(kernels.sass)}" + (f", PTX {sm_text(kernels.ptx)}" if kernels.ptx else "")
    know = f"{label} {', '.join(covering)} (srcbuild's data)" if covering else f"no {label} in srcbuild's data"
    version_pin = ".".join(covering[0].split(".")[:2]) if covering else ""
    fix = (
        f'pin {tool} = "{version_pin}" in the recipe\'s [toolchain]'
        if covering
        else f"build {label} from source for these GPUs, or drop {', '.join(uncovered)} from [gpu] arch"
    )
    raise IncompatibleError(
        f"{label} {version} in {prefix} has no kernel for compute capability {', '.join(uncovered)}: "
        f"its libraries ({libs}) hold {held}; {know} cover{'s' if len(covering) == 1 else ''} {first}",
        fix,
    )
