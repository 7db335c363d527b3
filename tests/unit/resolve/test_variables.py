"""Versions from tags and the variables that reach CMake."""

from __future__ import annotations

from srcbuild.envmods import EnvChanges
from srcbuild.resolve.variables import cmake_settings, version_of_tag


def test_version_of_tag() -> None:
    assert version_of_tag("v1.7.1") == "1.7.1"
    assert version_of_tag("v2.0.0-rc1") == "2.0.0rc1"
    assert version_of_tag("nightly") == "nightly"


def test_cmake_settings_leave_out_what_cmake_never_sees() -> None:
    env = (
        EnvChanges()
        .set("USE_CUDA", "1")
        .set("MAX_JOBS", "8")
        .set("CC", "/x/gcc")
        .set("PYTORCH_BUILD_VERSION", "1.0+cu118")
        .set("TORCH_CUDA_ARCH_LIST", "3.5")
        .prepend("PATH", "/x/bin")
    )
    assert cmake_settings(env) == (("CC", "/x/gcc"), ("TORCH_CUDA_ARCH_LIST", "3.5"), ("USE_CUDA", "1"))
