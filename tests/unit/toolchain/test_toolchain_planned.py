"""Provisioning planned for a build: the steps, their prefixes, and the host facts afterwards."""

from __future__ import annotations

import os
from pathlib import Path

from srcbuild.host.facts import GccInstall, HostFacts
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.toolchain.facts import load_facts
from srcbuild.toolchain.planned import PLANNED, plan_provisioning
from srcbuild.toolchain.store import ToolchainStore


def test_kepler_cu92_on_a_bare_machine_plans_cuda_cudnn_and_gcc(tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92")
    store = ToolchainStore(tmp_path)
    host = HostFacts(gccs=(GccInstall(12, "12.2.0", Path("/usr/bin/gcc-12")),))
    planned = plan_provisioning(recipe, host, store, load_facts({}))
    assert [s.describe() for s in planned.steps] == [
        "provision CUDA 9.2 (runfile) from https://developer.nvidia.com/compute/cuda/9.2/Prod2/local_installers/"
        f"cuda_9.2.148_396.37_linux into {tmp_path}/cuda-9.2-runfile",
        "provision cuDNN 7.6 (nvidia) from https://developer.download.nvidia.com/compute/redist/cudnn/v7.6.5/"
        f"cudnn-9.2-linux-x64-v7.6.5.32.tgz into {tmp_path}/cudnn-7.6.5.32-cuda9.2-nvidia",
        f"provision gcc 7 (conda) from conda-forge: gcc_linux-64 7.* gxx_linux-64 7.* into {tmp_path}/gcc-7-conda",
    ]
    assert [s.command() for s in planned.steps] == [
        "srcbuild toolchain install cuda 9.2 --from runfile",
        "srcbuild toolchain install cudnn 7.6 --from nvidia --cuda 9.2",
        "srcbuild toolchain install gcc 7 --from conda",
    ]
    after = planned.facts
    toolkit = after.cuda_toolkit("9.2")
    assert toolkit is not None and (toolkit.version, toolkit.home, toolkit.source) == (
        "9.2.148",
        tmp_path / "cuda-9.2-runfile",
        PLANNED,
    )
    gcc = after.gcc(7)
    assert gcc is not None and gcc.path == tmp_path / "gcc-7-conda" / "bin" / "gcc-7"
    cudnn = after.cudnn_version("7.6")
    assert cudnn is not None and cudnn.header == tmp_path / "cudnn-7.6.5.32-cuda9.2-nvidia" / "include" / "cudnn.h"
    assert host.cuda_toolkits == ()  # the input is not changed


def test_nothing_is_planned_when_the_host_has_everything(tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92")
    from srcbuild.host.facts import CudaToolkit, HeaderVersion

    host = HostFacts(
        gccs=(GccInstall(7, "7.5.0", Path("/usr/bin/gcc-7")),),
        cuda_toolkits=(CudaToolkit("9.2.148", Path("/usr/local/cuda-9.2"), Path("/usr/local/cuda-9.2/bin/nvcc"), "x"),),
        cudnn=(HeaderVersion("7.6.5", Path("/usr/local/cuda-9.2/include/cudnn.h")),),
    )
    planned = plan_provisioning(recipe, host, ToolchainStore(tmp_path), load_facts({}))
    assert planned.steps == () and planned.facts == host
    assert [n.status for n in planned.needs] == ["host", "host", "host"]


def test_a_cuda_home_given_by_the_user_is_never_replaced(tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92")
    planned = plan_provisioning(recipe, HostFacts(), ToolchainStore(tmp_path), load_facts({}), exclude=("cuda",))
    assert [s.offer.request.tool for s in planned.steps] == ["cudnn", "gcc"]
    assert planned.facts.cuda_toolkit("9.2") is None
