"""Where the host probe looks for provisioned toolchains: the directories of complete prefixes.

A provisioned CUDA home is one more place ``nvcc`` is looked for, a provisioned gcc's ``bin`` one
more place ``gcc-N`` is, a cuDNN or NCCL prefix's ``include`` one more place their headers are;
so ``srcbuild toolchain install --recipe R`` followed by ``srcbuild torch --recipe R`` builds with
them, and the host's own install still comes first.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild.host.facts import ProvisionedDirs
from srcbuild.toolchain.store import ToolchainStore


def provisioned_dirs(toolchain_dir: Path) -> ProvisionedDirs:
    """The complete prefixes under ``toolchain_dir``, for ``probe_host(provisioned=...)``."""
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
