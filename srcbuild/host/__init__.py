"""Know the machine: GPUs, driver, CUDA toolkits, cuDNN, NCCL, gcc, MPI, conda, docker, resources.

``probe_host()`` returns a frozen ``HostFacts`` in well under a second on a machine without a GPU.
It never raises: what it cannot find or ask becomes a line in ``HostFacts.missing``. Every probe
runs programs through ``srcbuild.proc.probe`` and reads files below ``root`` with the PATH and
variables of ``environ``, so tests can point it at a fixture tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srcbuild.host.facts import (
        CudaToolkit,
        DockerInfo,
        DriverInfo,
        GccInstall,
        GpuInfo,
        HeaderVersion,
        HostFacts,
        MpiInstall,
        Resources,
    )
    from srcbuild.host.probe import probe_host

# What the package offers, from the module that holds it; imported on first use (PEP 562), so that
# importing a leaf such as ``srcbuild.host.platform`` does not load every probe (and the knowledge
# tables the toolchain probe reads).
_OFFERS = {
    "probe_host": "srcbuild.host.probe",
    **dict.fromkeys(
        (
            "CudaToolkit",
            "DockerInfo",
            "DriverInfo",
            "GccInstall",
            "GpuInfo",
            "HeaderVersion",
            "HostFacts",
            "MpiInstall",
            "Resources",
        ),
        "srcbuild.host.facts",
    ),
}

__all__ = [
    "CudaToolkit",
    "DockerInfo",
    "DriverInfo",
    "GccInstall",
    "GpuInfo",
    "HeaderVersion",
    "HostFacts",
    "MpiInstall",
    "Resources",
    "probe_host",
]


def __getattr__(name: str) -> Any:
    if name not in _OFFERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_OFFERS[name]), name)
