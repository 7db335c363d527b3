"""MAX_JOBS from memory and cores."""

from __future__ import annotations

from srcbuild.host.jobs import GIB, max_jobs


def test_memory_bounds_jobs_below_cores() -> None:
    assert max_jobs(16 * GIB, 16) == (
        4,
        "16.0 GiB of memory allows 4 jobs at 3 GiB each (keeping 2 GiB free), fewer than the 16 cores",
    )


def test_cores_bound_jobs_when_memory_is_plenty() -> None:
    assert max_jobs(64 * GIB, 4) == (4, "4 cores; 64.0 GiB of memory allows 20 jobs at 3 GiB each")


def test_at_least_one_job_and_unknown_memory() -> None:
    assert max_jobs(2 * GIB, 8)[0] == 1
    assert max_jobs(None, 6) == (6, "6 cores; memory unknown, so not bounded by memory")


def test_per_job_figure_can_be_raised() -> None:
    assert max_jobs(32 * GIB, 32, per_job_gib=6)[0] == 5
