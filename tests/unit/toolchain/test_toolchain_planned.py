"""Provisioning planned for a build: the steps, their prefixes, and the host facts afterwards."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from srcbuild.host.facts import GccInstall, HostFacts
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.toolchain.data_files import load_facts
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
        "srcbuild toolchain install cudnn 7.6 --from nvidia --cuda 9.2 --arch 3.0",
        "srcbuild toolchain install gcc 7 --from conda",
    ]
    assert planned.magma_home is None  # magma-cuda92 has no kernels a compute capability 3.0 GPU runs
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


def test_the_cu126_recipes_plan_cudnn_910_from_the_package_index(tmp_path: Path) -> None:
    catalog = RecipeCatalog(Paths.resolve(environ=os.environ))
    for name in ("maxwell-cu126", "pascal-cu126", "pascal-cu126-mpi", "volta-cu126"):
        planned = plan_provisioning(catalog.load(name), HostFacts(), ToolchainStore(tmp_path), load_facts({}))
        [cudnn] = [s for s in planned.steps if s.offer.request.tool == "cudnn"]
        assert cudnn.offer.provider == "pypi", name
        assert cudnn.offer.origin == "nvidia-cudnn-cu12==9.10.2.21 from the package index", name
    recipe = catalog.load("pascal-cu126")
    planned = plan_provisioning(recipe, HostFacts(), ToolchainStore(tmp_path), load_facts({}))
    [cudnn] = [s for s in planned.steps if s.offer.request.tool == "cudnn"]
    assert cudnn.describe() == (
        "provision cuDNN 9.10 (pypi, 674.0 MiB) from nvidia-cudnn-cu12==9.10.2.21 from the package index into "
        f"{tmp_path}/cudnn-9.10.2.21-cuda12-pypi"
    )
    assert cudnn.command() == "srcbuild toolchain install cudnn 9.10 --from pypi --cuda 12.6 --arch 6.0 --arch 6.1"
    after = planned.facts.cudnn_version("9.10")
    assert after is not None and after.header.parent == tmp_path / "cudnn-9.10.2.21-cuda12-pypi" / "include"
    # SRCBUILD_TOOLCHAIN_PROVIDERS=nvidia: NVIDIA's redist archive instead
    planned = plan_provisioning(recipe, HostFacts(), ToolchainStore(tmp_path), load_facts({}), prefer=("nvidia",))
    [cudnn] = [s for s in planned.steps if s.offer.request.tool == "cudnn"]
    assert cudnn.offer.provider == "nvidia" and cudnn.offer.origin.endswith("9.10.2.21_cuda12-archive.tar.xz")
    assert cudnn.command() == "srcbuild toolchain install cudnn 9.10 --from nvidia --cuda 12.6 --arch 6.0 --arch 6.1"


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


def test_magma_is_planned_where_its_kernels_run_on_the_recipes_gpus(tmp_path: Path) -> None:
    # 6.1: runs magma's sm_60 kernels
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("pascal-mx150-cu113")
    planned = plan_provisioning(recipe, HostFacts(), ToolchainStore(tmp_path), load_facts({}))
    [magma] = [s for s in planned.steps if s.offer.request.tool == "magma"]
    assert magma.describe() == (
        f"provision MAGMA for CUDA 11.3 (conda) from pytorch: magma-cuda113 into {tmp_path}/magma-cuda11.3-conda"
    )
    assert magma.command() == "srcbuild toolchain install magma 11.3 --from conda --arch 6.1"
    assert planned.magma_home == tmp_path / "magma-cuda11.3-conda"
    off = dataclasses.replace(recipe, build=dataclasses.replace(recipe.build, env=(("USE_MAGMA", "0"),)))
    planned = plan_provisioning(off, HostFacts(), ToolchainStore(tmp_path), load_facts({}))
    assert "magma" not in [s.offer.request.tool for s in planned.steps] and planned.magma_home is None


def test_which_gpus_run_magmas_kernels() -> None:
    magma = load_facts({}).magma
    assert magma is not None
    assert [a for a in ("3.0", "3.5", "3.7", "5.0", "5.2", "6.1", "7.5") if magma.runs_on(a)] == [
        "3.7", "5.0", "5.2", "6.1", "7.5"
    ]  # fmt: skip


def test_a_portable_build_plans_the_conda_gcc_with_its_sysroot_even_beside_a_host_gcc(tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92")
    store = ToolchainStore(tmp_path / "toolchains")
    host_gcc = GccInstall(7, "7.5.0", Path("/usr/bin/gcc-7"), Path("/usr/bin/g++-7"))
    planned = plan_provisioning(recipe, HostFacts(gccs=(host_gcc,)), store, load_facts({}), sysroot="2.17")
    [gcc] = [s for s in planned.steps if s.offer.request.tool == "gcc"]
    prefix = tmp_path / "toolchains" / "gcc-7-sysroot2.17-conda"
    assert gcc.describe() == (
        "provision gcc 7 with sysroot glibc 2.17 (conda) from conda-forge: gcc_linux-64 7.* gxx_linux-64 7.* "
        f"sysroot_linux-64 2.17.* into {prefix}"
    )
    assert gcc.command() == "srcbuild toolchain install gcc 7 --from conda --sysroot 2.17"
    # without --portable the host's gcc-7 serves the recipe and nothing is fetched for gcc
    plain = plan_provisioning(recipe, HostFacts(gccs=(host_gcc,)), store, load_facts({}))
    assert not [s for s in plain.steps if s.offer.request.tool == "gcc"]


def test_a_host_conda_gcc_with_that_sysroot_serves_a_portable_build(tmp_path: Path) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92")
    env = tmp_path / "conda-env"
    (env / "conda-meta").mkdir(parents=True)
    (env / "conda-meta" / "sysroot_linux-64-2.17-h4a8ded7_18.json").write_text("{}")
    conda_gcc = GccInstall(7, "7.5.0", env / "bin" / "gcc-7", env / "bin" / "g++-7")
    store = ToolchainStore(tmp_path / "toolchains")
    planned = plan_provisioning(recipe, HostFacts(gccs=(conda_gcc,)), store, load_facts({}), sysroot="2.17")
    [need] = [n for n in planned.needs if n.request.tool == "gcc"]
    assert (need.status, need.where) == ("host", env / "bin" / "gcc-7")
    older = plan_provisioning(recipe, HostFacts(gccs=(conda_gcc,)), store, load_facts({}), sysroot="2.12")
    assert [n.status for n in older.needs if n.request.tool == "gcc"] == ["fetch"]


def test_doctor_and_toolchain_install_recipe_follow_the_portable_setting(tmp_path: Path) -> None:
    """What `doctor` says a recipe fetches, and what `toolchain install --recipe` provisions, is
    the portable compiler when a build of the recipe would be portable."""
    from srcbuild.resolve.portable import recipe_sysroot
    from srcbuild.toolchain.report import toolchain_report
    from srcbuild.toolchain.session import open_session

    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92")
    assert recipe_sysroot(recipe, {}) is None
    assert recipe_sysroot(recipe, {"SRCBUILD_PORTABLE": "1"}) == "2.17"
    assert recipe_sysroot(recipe, {"SRCBUILD_PORTABLE": "1"}, portable=False) is None  # --no-portable
    assert recipe_sysroot(recipe, {}, portable=True) == "2.17"

    session = open_session(Paths.resolve(environ={"SRCBUILD_WORK_DIR": str(tmp_path)}), environ={})
    host = HostFacts(gccs=(GccInstall(7, "7.5.0", Path("/usr/bin/gcc-7"), Path("/usr/bin/g++-7")),))
    plain = toolchain_report(session, host, [recipe]).render()
    portable = toolchain_report(session, host, [recipe], lambda r: recipe_sysroot(r, {}, portable=True)).render()
    assert "CUDA 9.2 (runfile)" in plain and "gcc 7" not in plain  # the host's gcc-7 serves a plain build
    assert "gcc 7 with sysroot glibc 2.17 (conda)" in " ".join(portable.split())
