"""Every performance goal srcbuild holds itself to, stated once, and the benchmark that judges it.

Each goal is judged on CPU seconds (user + system of every process a side ran), which the other
work of a shared machine changes far less than the wall time; every benchmark prints the wall
time and the load average beside it, alternates its runs with the baseline's and prints min and
median. The baseline is the strongest a user would pick. ``run_all.py`` runs them and prints one
table; each benchmark can also run alone.

+-------------+------------------------------------------------+------------------------------------------------+
| benchmark   | goal (CPU seconds)                             | baseline                                       |
+=============+================================================+================================================+
| startup     | --help <= 0.06 s; doctor, plan, recommend      | ``python -c pass`` (printed beside)            |
|             | <= 0.2 s each                                  |                                                |
| install     | a cache hit <= 1.5x uv, first install and      | ``uv pip install`` and ``pip install`` of the  |
|             | repeat (same uv cache state; from the hit's    | same wheel file, no dependencies               |
|             | record); decided anew <= 1.0x pip              |                                                |
| lookup      | ``cache ls`` and ``gc --dry-run`` <= 1 s at    | the same store listed at 100 entries           |
|             | 10,000 entries, flat within 2x from 100 to     |                                                |
|             | 100,000 per entry; a lookup flat               |                                                |
| verify      | <= 0.3x the lean baseline on the real torch    | unzip of the CUDA libraries alone + cuobjdump  |
|             | 2.0.1 wheel, <= 200 MiB peak                   |                                                |
| source_sync | first sync <= 1.2x; second tag <= 1.5x         | ``git clone --recursive --jobs N``; ``git      |
|             |                                                | fetch`` + checkout + submodule update in a     |
|             |                                                | single-branch clone of the first tag           |
| resume      | edges re-run <= edges left + 1; CPU share <=   | the same ``setup.py bdist_wheel`` re-run by    |
|             | 1.2x the share of edges left; <= +0.8 s over   | hand in the failed tree                        |
|             | the re-run by hand                             |                                                |
| overhead    | a fixture build <= +0.8 s CPU; the larger      | the same commands by hand (``plan --format     |
|             | build < 5% CPU                                 | shell | bash``)                                |
+-------------+------------------------------------------------+------------------------------------------------+
"""

from __future__ import annotations

from pathlib import Path

CUDA_118 = Path.home() / ".cache/srcbuild-ci/toolchains/cuda-11.8-debian"

# name -> (the benchmark's file, its arguments for a full run, for a quick one on a loaded machine)
BENCHES: dict[str, tuple[str, list[str], list[str]]] = {
    "startup": ("bench_startup.py", ["--runs", "9"], ["--runs", "5"]),
    "install": ("bench_cache_install.py", ["--pairs", "5", "--sizes", "0.01,100", "--real"], ["--pairs", "3"]),
    "lookup": ("bench_cache_lookup.py", ["--sizes", "100,10000,100000", "--repeat", "5"], ["--repeat", "3"]),
    "verify": ("bench_verify_wheel.py", ["--pairs", "3"], ["--pairs", "1"]),
    "source_sync": ("bench_source_sync.py", ["--repeat", "3"], ["--repeat", "2"]),
    "resume": ("bench_resume.py", ["--pairs", "3"], ["--pairs", "2"]),
    "overhead": (
        "bench_overhead.py",
        ["--rounds", "5", "--large-ops", "8", "--large-rounds", "3"],
        ["--rounds", "3", "--large-ops", "8", "--large-rounds", "2"],
    ),
}
# the benchmarks that build the fixture torch need a CUDA 11.8 toolkit
NEEDS_CUDA = ("resume", "overhead")
