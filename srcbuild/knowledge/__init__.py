"""The compatibility knowledge base: sourced facts about CUDA, drivers, GPUs, torch, cuDNN and breakages.

The facts live in ``srcbuild/knowledge/data/*.toml``, one row per fact, each with its source.
``load_knowledge()`` reads them once; rules (``srcbuild.rules``) and commands ask the returned
``KnowledgeBase``.
"""

from __future__ import annotations

from srcbuild.knowledge.base import KnowledgeBase, load_knowledge
from srcbuild.knowledge.model import (
    ArchSupport,
    Breakage,
    BuildPins,
    CudaPatch,
    CudaRelease,
    CudnnRelease,
    DriverBranch,
    DriverLimit,
    GccCaveat,
    GpuChip,
    GpuModel,
    PinReason,
    PipCommand,
    RuntimeCaveat,
    ToolFloor,
    TorchRelease,
    WheelCaveat,
)

__all__ = [
    "ArchSupport",
    "Breakage",
    "BuildPins",
    "CudaPatch",
    "CudaRelease",
    "CudnnRelease",
    "DriverBranch",
    "DriverLimit",
    "GccCaveat",
    "GpuChip",
    "GpuModel",
    "KnowledgeBase",
    "PinReason",
    "PipCommand",
    "RuntimeCaveat",
    "ToolFloor",
    "TorchRelease",
    "WheelCaveat",
    "load_knowledge",
]
