"""make_plan: the steps, their order, the build variables and the settings with their sources."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest

from srcbuild.errors import RecipeError, UsageError
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve import BuildHost, BuildOptions, Origin, Provider
from tests.unit.plan.conftest import FIXTURE_RECIPES, load, plan_for, resolved_for


def test_torch_steps_in_order(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(load(paths, "world-kepler-cu118"), options, host, paths, {})
    assert plan.step_ids == (
        "preflight",
        "compiler",
        "sources",
        "sources-check",
        "environment",
        "build-tree",
        "local-changes",
        "canary",
        "build",
        "verify",
        "cache",
    )
    assert plan.version == "2.5.1+cu118.sm35.sm37"
    assert plan.checkout == paths.work_dir / "src" / "world-kepler-cu118" / "pytorch"
    assert plan.state_path == paths.work_dir / "builds" / "world-kepler-cu118-torch" / "state.json"


def test_build_variables(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(load(paths, "world-kepler-cu118"), options, host, paths, {})
    env = plan.env.final_values()
    links = paths.work_dir / "compilers" / "gcc-11" / "bin"
    assert env["TORCH_CUDA_ARCH_LIST"] == "3.5;3.7+PTX"
    assert env["USE_CUDA"] == "1" and env["USE_CUDNN"] == "0" and env["USE_MPI"] == "0"
    assert env["CUDA_HOME"] == "/opt/cuda-11.8"
    assert env["MAX_JOBS"] == "4"
    assert env["BUILD_TEST"] == "0"
    assert env["CMAKE_PREFIX_PATH"] == "/envs/py311"
    assert env["PYTORCH_BUILD_VERSION"] == "2.5.1+cu118.sm35.sm37" and env["PYTORCH_BUILD_NUMBER"] == "1"
    assert env["CC"] == str(links / "gcc") and env["CXX"] == str(links / "g++")
    assert env["CUDAHOSTCXX"] == str(links / "g++")
    assert "CUDA_HOST_COMPILER" not in env  # 2.x aliases CUDAHOSTCXX itself
    assert env["USE_NCCL"] == "0"  # recipe [build] env
    assert "CMAKE_C_COMPILER_LAUNCHER" not in env  # no ccache on this host
    # the compiler's bin dir ends up first on PATH
    applied = plan.env.apply({"PATH": "/usr/bin"})
    assert applied["PATH"].split(":")[:3] == [str(links), "/envs/py311/bin", "/opt/cuda-11.8/bin"]
    origins = {c.name: c.origin for c in plan.env if c.op == "set"}
    assert origins["MAX_JOBS"] == "max_jobs (4 cores; 32.0 GiB of memory allows 10 jobs at 3 GiB each)"
    assert origins["USE_NCCL"] == (
        "recipe [build.env]: no NCCL in the wheel, so DDP is limited to gloo or MPI (docs/distributed.md)"
    )


def test_a_provisioned_magma_is_the_builds_magma_home(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "kepler-cu92")
    magma_home = paths.work_dir / "toolchains" / "magma-cuda9.2-conda"
    r = resolved_for(recipe, options, dataclasses.replace(host, magma_home=magma_home), paths, {})
    magma = r.toolchain("magma")
    assert (magma.path, magma.provider) == (magma_home, Provider.PROVISIONED)
    assert magma.source == "srcbuild toolchain (pytorch channel magma-cuda92)"
    env = plan_for(recipe, options, dataclasses.replace(host, magma_home=magma_home), paths, {}).env.final_values()
    assert env["MAGMA_HOME"] == str(magma_home)  # torch's FindMAGMA: HINTS $ENV{MAGMA_HOME}
    without = plan_for(recipe, options, host, paths, {})
    assert "MAGMA_HOME" not in without.env.final_values()
    assert without_magma_source(resolved_for(recipe, options, host, paths, {})) == (
        "not provisioned (no magma-cudaXY for this CUDA and these GPUs, or --no-provision): no MAGMA"
    )


def without_magma_source(r: Any) -> str:
    magma = r.toolchain("magma")
    assert magma.provider is Provider.NONE and magma.path is None
    return str(magma.source)


def test_old_torch_gets_the_era_names(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "kepler-cu92")  # torch v1.7.1: CUDA_HOST_COMPILER for FindCUDA, CUDNN_LIBRARY
    host = dataclasses.replace(host, cudnn_root=Path("/opt/cudnn"), ccache=Path("/usr/bin/ccache"))
    env = plan_for(recipe, options, host, paths, {}).env.final_values()
    links = paths.work_dir / "compilers" / "gcc-7" / "bin"
    assert env["CUDA_HOST_COMPILER"] == str(links / "g++")
    assert env["USE_CUDNN"] == "1"
    assert env["CUDNN_INCLUDE_DIR"] == "/opt/cudnn/include"
    assert env["CUDNN_LIB_DIR"] == env["CUDNN_LIBRARY"] == "/opt/cudnn/lib64"
    assert env["CMAKE_CUDA_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert env["PYTORCH_BUILD_VERSION"] == "1.7.1+cu92.sm30"
    assert "NO_CUDA" not in env


def test_mpi_recipe_sets_use_mpi(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(load(paths, "world-kepler-cu118-mpi"), options, host, paths, {})
    assert plan.env.final_values()["USE_MPI"] == "1"
    assert plan.version == "2.5.1+cu118.sm35.mpi"


def test_settings_precedence(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "world-kepler-cu118")
    by_name = {s.name: s for s in plan_for(recipe, options, host, paths, {}).settings}
    assert (by_name["max_jobs"].value, by_name["max_jobs"].source) == ("4", "default (host memory)")
    env = {"MAX_JOBS": "3", "SRCBUILD_KEEP_BUILD": "1", "SRCBUILD_CUDA_HOME": "/env/cuda"}
    by_name = {s.name: s for s in plan_for(recipe, options, host, paths, env).settings}
    assert (by_name["max_jobs"].value, by_name["max_jobs"].source) == ("3", "environment MAX_JOBS")
    assert (by_name["keep_build"].value, by_name["keep_build"].source) == ("yes", "environment SRCBUILD_KEEP_BUILD")
    assert (by_name["cuda_home"].value, by_name["cuda_home"].source) == ("/env/cuda", "environment SRCBUILD_CUDA_HOME")
    cli = dataclasses.replace(options, max_jobs=1, keep_build=False, cuda_home="/cli/cuda")
    plan = plan_for(recipe, cli, host, paths, env)
    by_name = {s.name: s for s in plan.settings}
    assert (by_name["max_jobs"].value, by_name["max_jobs"].source) == ("1", "command line --max-jobs")
    assert (by_name["keep_build"].value, by_name["keep_build"].source) == ("no", "command line --keep-build")
    assert (by_name["cuda_home"].value, by_name["cuda_home"].source) == ("/cli/cuda", "command line --cuda-home")
    assert by_name["gcc"].source == "recipe world-kepler-cu118.toml [toolchain.gcc]"
    assert plan.env.final_values()["MAX_JOBS"] == "1" and not plan.keep_build


def test_bad_max_jobs_is_a_usage_error(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "world-kepler-cu118")
    with pytest.raises(UsageError) as err:
        plan_for(recipe, options, host, paths, {"MAX_JOBS": "many"})
    assert err.value.message == "MAX_JOBS='many' is not a whole number"
    with pytest.raises(UsageError) as err:
        plan_for(recipe, dataclasses.replace(options, max_jobs=0), host, paths, {})
    assert err.value.message == "--max-jobs 0 must be at least 1"


def test_torchvision_needs_a_tag(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "world-kepler-cu118-mpi")
    with pytest.raises(RecipeError) as err:
        plan_for(recipe, dataclasses.replace(options, package="torchvision"), host, paths, {})
    assert err.value.message == "recipe world-kepler-cu118-mpi pins no torchvision tag"


def test_torchvision_plan(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(
        load(paths, "world-kepler-cu118"), dataclasses.replace(options, package="torchvision"), host, paths, {}
    )
    assert plan.step_ids[:3] == ("preflight", "torch-wheel", "compiler")
    assert plan.step_ids.index("install-torch") == plan.step_ids.index("environment") + 1
    env = plan.env.final_values()
    assert env["FORCE_CUDA"] == "1"
    assert env["BUILD_VERSION"] == "0.20.1+cu118.sm35.sm37"
    assert env["PYTORCH_VERSION"] == "2.5.1+cu118.sm35.sm37"
    assert env["TORCH_CUDA_ARCH_LIST"] == "3.5;3.7+PTX"
    install = plan.step("install-torch").commands[0].argv
    assert install[-1] == "torch==2.5.1+cu118.sm35.sm37" and "--no-index" in install
    assert "canary" not in plan.step_ids  # its registry entry has none: build_ext has no one-object target


def test_private_compiler_commands_always_pass_log(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(load(paths, "world-kepler-cu118"), options, host, paths, {})
    ua = [c.argv for c in plan.step("compiler").commands if c.argv[0] == "update-alternatives"]
    root = paths.work_dir / "compilers" / "gcc-11"
    assert len(ua) == 2
    for argv in ua:
        assert argv[1:7] == (
            "--altdir",
            str(root / "alt"),
            "--admindir",
            str(root / "admin"),
            "--log",
            str(root / "update-alternatives.log"),
        )
    assert ua[1][7:] == ("--set", "gcc", "/usr/bin/gcc-11")


def test_system_alternatives_plan(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    plan = plan_for(
        load(paths, "world-kepler-cu118"), dataclasses.replace(options, system_alternatives=True), host, paths, {}
    )
    ua = [c.argv for c in plan.step("compiler").commands]
    assert ua[0][:3] == ("update-alternatives", "--log", str(paths.work_dir / "compilers" / "update-alternatives.log"))
    assert ua[0][3:6] == ("--install", "/usr/bin/gcc", "gcc")
    assert ua[-1][-3:] == ("--set", "gcc", "/usr/bin/gcc-11")
    assert plan.system_alternatives
    assert plan.env.final_values()["CC"] == "/usr/bin/gcc"
    assert "restored" in plan.step("compiler").why


def test_settings_hash_follows_what_reaches_cmake(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "world-kepler-cu118")
    base = plan_for(recipe, options, host, paths, {})
    fewer_jobs = plan_for(recipe, dataclasses.replace(options, max_jobs=1), host, paths, {})
    other_cuda = plan_for(recipe, dataclasses.replace(options, cuda_home="/other/cuda"), host, paths, {})
    assert base.cmake_settings_hash == fewer_jobs.cmake_settings_hash  # MAX_JOBS does not reach CMake
    assert base.cmake_settings_hash != other_cuda.cmake_settings_hash


def test_plan_is_pure_and_stable(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "world-kepler-cu118")
    assert (
        plan_for(recipe, options, host, paths, {}).fingerprint()
        == plan_for(recipe, options, host, paths, {}).fingerprint()
    )
    assert not paths.work_dir.exists()  # nothing was created


def test_environment_step_without_a_backend_says_why(paths: Paths, host: BuildHost) -> None:
    recipe = load(paths, "kepler-cu92")  # Python 3.8 and conda-only packages: no venv
    bare = dataclasses.replace(host, conda_tools=(), rattler=False)  # no conda tool, no py-rattler
    plan = plan_for(recipe, BuildOptions(), bare, paths, {"PATH": ""})
    step = plan.step("environment")
    assert step.title == "Build environment: Python 3.8 (no way to make it here)"
    assert step.action is not None and step.action.describe().startswith("cannot: no way to make a conda environment")


def test_environment_step_installs_from_the_recipes_lockfile(
    paths: Paths, host: BuildHost, options: BuildOptions, tmp_path: Path
) -> None:
    import importlib.util

    from tests.conftest import require_tool

    require_tool("py-rattler (the rattler backend)", importlib.util.find_spec("rattler"))
    recipe_file = tmp_path / "recipes" / "world-kepler-cu118.toml"
    recipe_file.parent.mkdir()
    recipe_file.write_text((FIXTURE_RECIPES / "world-kepler-cu118.toml").read_text())
    lockfile = recipe_file.parent / "world-kepler-cu118.conda-lock.yml"
    lockfile.write_text("version: 1\n")
    recipe = RecipeCatalog(paths).load(str(recipe_file))
    no_env = dataclasses.replace(options, env_prefix=None, env_backend="rattler")
    with_rattler = dataclasses.replace(host, rattler=True)  # as probed: the planner imports nothing
    step = next(s for s in plan_for(recipe, no_env, with_rattler, paths, {}).steps if s.id == "environment")
    assert step.action is not None
    assert step.action.args()["lockfile"] == str(lockfile)
    assert f"install the exact packages of {lockfile} (no solve" in step.action.describe()


def test_planning_imports_no_optional_package(
    paths: Paths, host: BuildHost, options: BuildOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # py-rattler "not installed": an import of it raises. Resolving and planning never import it,
    # whatever backend the probed host offers.
    monkeypatch.setitem(sys.modules, "rattler", None)
    recipe = load(paths, "kepler-cu92")
    for rattler in (True, False):
        probed = dataclasses.replace(host, rattler=rattler, conda_tools=(("micromamba", "/opt/bin/micromamba"),))
        no_env = dataclasses.replace(options, env_prefix=None)
        plan = plan_for(recipe, no_env, probed, paths, {"PATH": ""})
        assert plan.step("environment").title == "Build environment: micromamba, Python 3.8"
        rattler_plan = plan_for(recipe, dataclasses.replace(no_env, env_backend="rattler"), probed, paths, {})
        assert rattler_plan.step("environment").title.startswith(
            "Build environment: rattler" if rattler else "Build environment: Python 3.8 (no way"
        )


def test_resolved_build_records_each_decision_and_its_origin(
    paths: Paths, host: BuildHost, options: BuildOptions
) -> None:
    recipe = load(paths, "world-kepler-cu118")
    r = resolved_for(recipe, dataclasses.replace(options, max_jobs=2), host, paths, {"SRCBUILD_KEEP_BUILD": "1"})
    origins = {s.name: s.origin for s in r.settings}
    assert origins["gcc"] is Origin.RECIPE
    assert origins["keep_build"] is Origin.ENVIRONMENT
    assert origins["max_jobs"] is Origin.COMMAND_LINE
    assert origins["cuda_home"] is Origin.HOST_PROBE
    assert Origin.DEFAULT < Origin.RECIPE < Origin.ENVIRONMENT < Origin.COMMAND_LINE < Origin.HOST_PROBE
    assert (r.max_jobs, r.keep_build) == (2, True)
    assert r.package.name == "torch" and r.pin == recipe.torch
    gcc = r.toolchain("gcc")
    assert (gcc.path, gcc.provider) == (Path("/usr/bin/gcc-11"), Provider.HOST)
    cuda = r.toolchain("cuda")
    assert (cuda.path, cuda.provider, cuda.pinned) == (Path("/opt/cuda-11.8"), Provider.HOST, "11.8")
    assert r.toolchain("mpi").provider is Provider.NONE
    assert [t.name for t in r.toolchains] == ["python", "gcc", "g++", "cuda", "cudnn", "mpi", "nccl", "magma"]
    assert r.environment.existing and r.environment.prefix == Path("/envs/py311")
    assert r.mirrors.rewrite("https://github.com/pytorch/pytorch") == "file:///mirror/pytorch/pytorch"
    assert r.findings and r.host_findings == ()  # the rules ran; no host facts, no host rules


def test_a_toolkit_under_the_toolchains_directory_is_provisioned(
    paths: Paths, host: BuildHost, options: BuildOptions
) -> None:
    home = paths.toolchain_dir / "cuda-11.8"
    provisioned = dataclasses.replace(host, cuda_home=home)
    r = resolved_for(load(paths, "world-kepler-cu118"), options, provisioned, paths, {})
    assert (r.toolchain("cuda").path, r.toolchain("cuda").provider) == (home, Provider.PROVISIONED)
    assert r.toolchain("gcc").provider is Provider.HOST
