"""Where the host probe looks for provisioned toolchains: the directories of complete prefixes.

A provisioned CUDA home is one more place ``nvcc`` is looked for, a provisioned gcc's ``bin`` one
more place ``gcc-N`` is, a cuDNN or NCCL prefix's ``include`` one more place their headers are;
so ``srcbuild toolchain install --recipe R`` followed by ``srcbuild torch --recipe R`` builds with
them, and the host's own install still comes first.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from srcbuild.records import record
from srcbuild.toolchain.store import ToolchainStore


@record
class ProvisionedDirs:
    cuda_homes: list[tuple[Path, str]] = field(default_factory=list)  # (home, "srcbuild toolchain <key>")
    gcc_bins: list[Path] = field(default_factory=list)
    cudnn: list[Path] = field(default_factory=list)
    nccl: list[Path] = field(default_factory=list)
    mpi_bins: list[Path] = field(default_factory=list)


def provisioned_dirs(toolchain_dir: Path) -> ProvisionedDirs:
    out = ProvisionedDirs()
    for entry in ToolchainStore(toolchain_dir).entries():
        if entry.name == "cuda":
            out.cuda_homes.append((entry.prefix, f"srcbuild toolchain {entry.key}"))
        elif entry.name == "gcc":
            out.gcc_bins.append(entry.prefix / "bin")
        elif entry.name == "cudnn":
            out.cudnn.append(entry.prefix / "include")
        elif entry.name == "nccl":
            out.nccl.append(entry.prefix / "include")
        elif entry.name in ("openmpi", "mpich"):
            out.mpi_bins.append(entry.prefix / "bin")
    return out
