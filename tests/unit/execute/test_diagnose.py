"""Failure signatures: each known log line gives its explanation and fix (exact text)."""

from __future__ import annotations

from srcbuild.execute.diagnose import diagnose, first_error

NVCC_GCC12 = (
    "/opt/cuda/bin/../targets/x86_64-linux/include/crt/host_config.h:132:2: error: #error -- unsupported GNU "
    "version! gcc versions later than 11 are not supported! The nvcc flag '-allow-unsupported-compiler' can be "
    "used to override this version check"
)


def test_unsupported_gnu_version() -> None:
    (d,) = diagnose(["[3/12] Building CUDA kernels", NVCC_GCC12])
    assert d.id == "unsupported-gnu-version"
    assert d.meaning == "nvcc refuses the host compiler: this CUDA accepts gcc 11 at most"
    assert (
        d.hint == "set [toolchain] gcc to 11 or older in the recipe (srcbuild selects it through update-alternatives)"
    )


def test_unsupported_arch() -> None:
    (d,) = diagnose(["nvcc fatal   : Unsupported gpu architecture 'compute_35'"])
    assert d.meaning == "this CUDA's nvcc cannot compile for compute_35"


def test_sm30_intrinsics() -> None:
    (d,) = diagnose(['nccl/src/collectives/device/common.h(12): error: identifier "__funnelshift_r" is undefined'])
    assert d.id == "sm30-intrinsics"
    assert (
        d.meaning
        == "__funnelshift_r does not exist on compute capability 3.0; the bundled NCCL (and some kernels) use it"
    )
    assert d.hint == 'build without NCCL (USE_NCCL = "0" in [build] env) or drop 3.0 from [gpu] arch'
    (d,) = diagnose(['error: identifier "__ldg" is undefined'])
    assert d.meaning.startswith("__ldg does not exist")


def test_oom_killed() -> None:
    (d,) = diagnose(["c++: fatal error: Killed signal terminated program cc1plus"])
    assert (
        d.meaning
        == "the compiler was killed, most likely by the out-of-memory killer (Killed signal terminated program cc1plus)"
    )
    assert d.hint == "run fewer compile jobs at once: --max-jobs with a smaller number (then --resume)"


def test_mpi_and_submodules_and_cmake() -> None:
    found = diagnose(
        [
            "CMake Warning: Not compiling with MPI. Suppress this warning with -DUSE_MPI=OFF",
            "fatal: unable to access 'https://github.com/pytorch/cpuinfo.git/': Could not resolve host: github.com",
            "  Compatibility with CMake < 3.5 has been removed from CMake.",
        ]
    )
    assert [d.id for d in found] == ["mpi-not-found", "submodule-fetch", "cmake-too-new"]
    assert (
        found[1].hint
        == "fetch through a mirror: --mirror gitee, or --mirror https://github.com/=<your mirror>/ (repeatable)"
    )
    assert found[2].hint.startswith('add CMAKE_POLICY_VERSION_MINIMUM = "3.5" to [build] env')


def test_nothing_known() -> None:
    lines = ["+ cmake --build build", "x.c:2:43: error: 'y' undeclared", "FAILED: x.o", "ninja: build stopped"]
    assert diagnose(lines) == []
    assert first_error(lines) == "x.c:2:43: error: 'y' undeclared"
