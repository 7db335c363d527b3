"""From the host probe's facts to the few a plan needs: the recipe's gcc, its CUDA, ccache, jobs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from srcbuild.host.facts import CudaToolkit, GccInstall, HeaderVersion, HostFacts, Resources
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve.probe import build_host

RECIPE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "world" / "world-kepler-cu118.toml"


def test_picks_the_matching_gcc_and_cuda(tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ={})).load(str(RECIPE))
    facts = HostFacts(
        cuda_toolkits=(
            CudaToolkit("13.0.48", Path("/usr/local/cuda-13.0"), Path("/usr/local/cuda-13.0/bin/nvcc"), "PATH"),
            CudaToolkit("11.8.89", Path("/opt/cuda-11.8"), Path("/opt/cuda-11.8/bin/nvcc"), "CUDA_HOME"),
        ),
        gccs=(
            GccInstall(12, "12.2.0", Path("/usr/bin/gcc-12"), Path("/usr/bin/g++-12")),
            GccInstall(11, "11.3.0", Path("/usr/bin/gcc-11"), Path("/usr/bin/g++-11")),
        ),
        resources=Resources(
            cores=16, memory_bytes=8 * 1024**3, memory_available_bytes=None, work_dir=tmp_path, disk_free_bytes=None
        ),
    )
    (tmp_path / "bin").mkdir()
    ccache = tmp_path / "bin" / "ccache"
    ccache.write_text("#!/bin/sh\n")
    ccache.chmod(0o755)
    host = build_host(recipe, facts, {"PATH": str(tmp_path / "bin")})
    assert (host.gcc, host.gxx) == (Path("/usr/bin/gcc-11"), Path("/usr/bin/g++-11"))
    assert host.cuda_home == Path("/opt/cuda-11.8")
    assert host.cuda_home_source == "host probe (CUDA_HOME: nvcc 11.8.89)"
    assert host.ccache == ccache
    assert host.max_jobs == 2  # 8 GiB: (8 - 2) / 3 GiB per job, fewer than the 16 cores
    assert host.max_jobs_reason.startswith("8.0 GiB of memory allows 2 jobs at 3 GiB each")


def test_nothing_found() -> None:
    recipe = RecipeCatalog(Paths.resolve(environ={})).load(str(RECIPE))
    host = build_host(recipe, HostFacts(), {"PATH": ""})
    assert host.gcc is None and host.cuda_home is None and host.ccache is None
    assert host.cuda_home_source == "host probe (no matching nvcc found)"


def test_picks_the_pinned_cudnn_not_the_first_found() -> None:
    loaded = RecipeCatalog(Paths.resolve(environ={})).load(str(RECIPE))
    recipe = dataclasses.replace(loaded, toolchain=dataclasses.replace(loaded.toolchain, cudnn="8.5"))
    facts = HostFacts(
        cudnn=(
            HeaderVersion("9.1.0", Path("/usr/local/cuda-12.6/include/cudnn_version.h")),
            HeaderVersion("8.5.0", Path("/opt/cudnn-8.5/include/cudnn_version.h")),
        )
    )
    assert build_host(recipe, facts, {"PATH": ""}).cudnn_root == Path("/opt/cudnn-8.5")
    no_cudnn = dataclasses.replace(loaded, toolchain=dataclasses.replace(loaded.toolchain, cudnn=None))
    assert build_host(no_cudnn, facts, {"PATH": ""}).cudnn_root is None
