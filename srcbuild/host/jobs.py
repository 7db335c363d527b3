"""How many compile jobs fit in this machine's memory: the default ``MAX_JOBS`` of a build.

PyTorch's build runs ``MAX_JOBS`` compilers at once (default: every core). One nvcc or cc1plus job
on PyTorch's CUDA sources takes several GiB; with too many at once the kernel's OOM killer ends
the build with "Killed signal terminated program cc1plus" (pytorch/pytorch#5295: a build "froze at
2.5 GB" per job with MAX_JOBS=1; #89725 "virtual memory exhausted"; #49078; pytorch/builder commit
465d98b0 "setting MAX_JOBS=5 for oom"; conda-forge's pytorch-cpu-feedstock fixes MAX_JOBS=8 "to
avoid getting OOM-killed"). srcbuild therefore budgets ``PER_JOB_GIB`` per job and keeps
``RESERVE_GIB`` for the rest of the system, and never exceeds the core count.
"""

from __future__ import annotations

GIB = 1024**3
PER_JOB_GIB = 3.0  # one CUDA compile job, above the 2.5 GB of pytorch/pytorch#5295
RESERVE_GIB = 2.0  # left to the desktop, the linker and the page cache
SOURCE = "pytorch/pytorch#5295, #89725; pytorch/builder 465d98b0"


def jobs_memory_allows(memory_bytes: int, per_job_gib: float = PER_JOB_GIB) -> int:
    """How many compile jobs of ``per_job_gib`` fit in ``memory_bytes`` beside the reserve (at least one)."""
    return max(1, int((memory_bytes / GIB - RESERVE_GIB) // per_job_gib))


def max_jobs(memory_bytes: int | None, cores: int, per_job_gib: float = PER_JOB_GIB) -> tuple[int, str]:
    """(jobs, reason): at most one job per core and per ``per_job_gib`` of memory, at least one."""
    cores = max(1, cores)
    if memory_bytes is None:
        return cores, f"{cores} cores; memory unknown, so not bounded by memory"
    by_memory = jobs_memory_allows(memory_bytes, per_job_gib)
    gib = memory_bytes / GIB
    if by_memory < cores:
        return by_memory, (
            f"{gib:.1f} GiB of memory allows {by_memory} jobs at {per_job_gib:g} GiB each "
            f"(keeping {RESERVE_GIB:g} GiB free), fewer than the {cores} cores"
        )
    return cores, f"{cores} cores; {gib:.1f} GiB of memory allows {by_memory} jobs at {per_job_gib:g} GiB each"
