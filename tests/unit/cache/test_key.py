"""The cache key contract: what changes the fingerprint, what does not, and its exact value."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from srcbuild.cache.key import (
    FingerprintInputs,
    ResolvedFacts,
    entry_key,
    fingerprint,
    host_platform_tag,
    python_abi_tag,
)
from srcbuild.capability import ComputeCapability
from srcbuild.errors import RecipeError, UsageError
from srcbuild.recipe.model import Build, Gpu, Mpi, Recipe, SourcePin, Toolchain
from tests.unit.cache.synthetic import PLATFORM, catalog_recipe


def fp(recipe, package="torch", env=None, platform=PLATFORM) -> str:
    return fingerprint(FingerprintInputs.from_recipe(recipe, package, env or {}, platform_tag=platform))


def test_fingerprint_value_is_a_contract() -> None:
    # Changing this value is a breaking change: every cached wheel stops matching. Bump
    # FINGERPRINT_SCHEMA and say so in the release notes if it must change.
    recipe = Recipe(
        name="contract",
        description="a fixed recipe for the key contract",
        torch=SourcePin("v1.7.1", "https://github.com/pytorch/pytorch"),
        pins=(("torchvision", SourcePin("v0.8.2", "https://github.com/pytorch/vision")),),
        toolchain=Toolchain(python="3.8", gcc="7", cuda="9.2", cudnn="7.6"),
        gpu=Gpu(arch=(ComputeCapability(3, 0),), ptx=True),
        build=Build(env=(("USE_NCCL", "0"),)),
    )
    inputs = FingerprintInputs.from_recipe(recipe, "torch", {"MAX_JOBS": "4"}, platform_tag=PLATFORM)
    assert inputs.to_json() == {
        "schema": 2,
        "package": "torch",
        "source": {"tag": "v1.7.1", "repo": "https://github.com/pytorch/pytorch", "commit": None},
        "against": None,
        "patches": [],
        "build_env": {"USE_NCCL": "0"},
        "python_abi": "cp38",
        "gcc": "7",
        "cuda": "9.2",
        "cudnn": "7.6",
        "mpi": None,
        "platform": "linux_x86_64",
    }
    assert fingerprint(inputs) == "39ef53dba29ded820f445142822739bd13a040120bf34daca91ff453cb5e2d8a"


def test_arch_list_does_not_change_the_fingerprint() -> None:
    recipe = catalog_recipe("kepler-cu92")
    wider = dataclasses.replace(recipe, gpu=Gpu(arch=(ComputeCapability(3, 0), ComputeCapability(3, 5)), ptx=False))
    assert fp(recipe) == fp(wider)
    assert fp(recipe, env={"TORCH_CUDA_ARCH_LIST": "3.0+PTX"}) == fp(wider, env={"TORCH_CUDA_ARCH_LIST": "3.0;3.5"})


@pytest.mark.parametrize(
    "change",
    [
        lambda r: dataclasses.replace(r, torch=SourcePin("v1.7.0", r.torch.repo)),
        lambda r: dataclasses.replace(r, torch=SourcePin(r.torch.tag, r.torch.repo, "c" * 40)),
        lambda r: dataclasses.replace(r, torch=SourcePin(r.torch.tag, "https://example.org/fork/pytorch")),
        lambda r: dataclasses.replace(r, toolchain=dataclasses.replace(r.toolchain, gcc="6")),
        lambda r: dataclasses.replace(r, toolchain=dataclasses.replace(r.toolchain, python="3.7")),
        lambda r: dataclasses.replace(r, toolchain=dataclasses.replace(r.toolchain, cuda="10.2")),
        lambda r: dataclasses.replace(r, toolchain=dataclasses.replace(r.toolchain, cudnn="7.5")),
        lambda r: dataclasses.replace(r, mpi=Mpi(enabled=True, implementation="openmpi", version="4.1")),
        lambda r: dataclasses.replace(r, build=Build(env=(("USE_NCCL", "1"),))),
    ],
    ids=["tag", "commit", "repo", "gcc", "python", "cuda", "cudnn", "mpi", "build-env"],
)
def test_each_binary_input_changes_the_fingerprint(change) -> None:
    recipe = catalog_recipe("kepler-cu92")
    assert fp(change(recipe)) != fp(recipe)


def test_mpi_version_and_implementation_count() -> None:
    recipe = catalog_recipe("kepler-cu92")
    a = dataclasses.replace(recipe, mpi=Mpi(enabled=True, implementation="openmpi", version="4.1"))
    b = dataclasses.replace(recipe, mpi=Mpi(enabled=True, implementation="openmpi", version="3.1"))
    c = dataclasses.replace(recipe, mpi=Mpi(enabled=True, implementation="mpich", version="4.1"))
    assert len({fp(a), fp(b), fp(c)}) == 3


def test_platform_counts() -> None:
    recipe = catalog_recipe("kepler-cu92")
    assert fp(recipe, platform="linux_aarch64") != fp(recipe, platform="linux_x86_64")


def test_the_c_library_is_not_part_of_the_platform() -> None:
    from srcbuild.host.platform import host_libc, host_platform_tag

    assert "glibc" not in host_platform_tag() and host_libc().startswith("glibc2.")


def test_caller_variables_count_unless_ignored_or_paths() -> None:
    recipe = catalog_recipe("kepler-cu92")
    base = fp(recipe)
    assert fp(recipe, env={"USE_FBGEMM": "1"}) != base
    assert fp(recipe, env={"USE_KINETO": "0"}) != base
    same = {
        "MAX_JOBS": "2",
        "CUDA_HOME": "/usr/local/cuda-9.2",
        "CMAKE_CXX_COMPILER_LAUNCHER": "ccache",
        "PYTORCH_BUILD_VERSION": "1.7.1+cu92.sm30",
        "USE_CUDA": "1",
        "CUDNN_INCLUDE_DIR": "/opt/cudnn/include",
        "SOME_TOOL": "/opt/some/tool",
        "CMAKE_POLICY_VERSION_MINIMUM": "3.5",
    }
    assert fp(recipe, env=same) == base


def test_patches_are_keyed_by_content_and_package(tmp_path: Path) -> None:
    recipe = catalog_recipe("kepler-cu92")
    torch_patch = tmp_path / "0001-ldg.patch"
    torch_patch.write_text("--- a/x\n+++ b/x\n")
    vision_patch = tmp_path / "0001-arches.patch"
    vision_patch.write_text("--- a/y\n+++ b/y\n")
    patched = dataclasses.replace(
        recipe,
        build=dataclasses.replace(
            recipe.build,
            patches=("torch/v1.7.1/0001-ldg.patch", "torchvision/v0.8.2/0001-arches.patch"),
            patch_files=(torch_patch, vision_patch),
        ),
    )
    torch_fp, vision_fp = fp(patched), fp(patched, "torchvision")
    assert torch_fp != fp(recipe)
    assert vision_fp != fp(recipe, "torchvision")
    names = [p["name"] for p in FingerprintInputs.from_recipe(patched, "torch", {}, PLATFORM).to_json()["patches"]]
    assert names == ["torch/v1.7.1/0001-ldg.patch"]
    vision_patch.write_text("--- a/y\n+++ b/y\n+changed\n")
    assert fp(patched) == torch_fp
    assert fp(patched, "torchvision") != vision_fp


def test_torchvision_counts_the_torch_pin() -> None:
    recipe = catalog_recipe("kepler-cu92")
    other_torch = dataclasses.replace(recipe, torch=SourcePin("v1.7.0", recipe.torch.repo))
    assert fp(recipe, "torchvision") != fp(other_torch, "torchvision")
    assert fp(recipe, "torchvision") != fp(recipe, "torch")


def test_bad_package_and_missing_torchvision() -> None:
    recipe = catalog_recipe("kepler-cu92")
    with pytest.raises(UsageError, match="unknown package 'tensorflow'"):
        FingerprintInputs.from_recipe(recipe, "tensorflow", {})
    bare = dataclasses.replace(recipe, pins=())
    with pytest.raises(RecipeError, match="recipe kepler-cu92 pins no torchvision tag"):
        FingerprintInputs.from_recipe(bare, "torchvision", {})


def test_cpu_only_recipe() -> None:
    recipe = catalog_recipe("kepler-cu92")
    cpu = dataclasses.replace(recipe, toolchain=Toolchain(python="3.8", gcc="9", cuda=None), gpu=Gpu())
    data = FingerprintInputs.from_recipe(cpu, "torch", {}, PLATFORM).to_json()
    assert data["cuda"] is None and data["cudnn"] is None


def test_entry_key_counts_measured_facts() -> None:
    base = ResolvedFacts.create(source_commit="a" * 40, gcc_version="7.5.0", nvcc_version="9.2.148", arch=["3.0"])
    keys = {
        entry_key("f" * 64, base),
        entry_key("e" * 64, base),
        entry_key("f" * 64, dataclasses.replace(base, arch=("3.0", "3.5"))),
        entry_key("f" * 64, dataclasses.replace(base, gcc_version="7.4.0")),
        entry_key(
            "f" * 64, ResolvedFacts.create(source_commit="a" * 40, submodule_commits={"third_party/x": "b" * 40})
        ),
    }
    assert len(keys) == 5
    assert ResolvedFacts.from_json(base.to_json()) == base


def test_host_platform_tag_and_abi() -> None:
    tag = host_platform_tag()
    assert tag.startswith("linux_") and "glibc" not in tag  # the C library is matched, not hashed
    assert python_abi_tag("3.8") == "cp38"
    assert python_abi_tag("3.10") == "cp310"
    with pytest.raises(UsageError):
        python_abi_tag("three")
