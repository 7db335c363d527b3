"""Failure signatures: each known log line gives its explanation and fix (exact text)."""

from __future__ import annotations

from srcbuild.execute.diagnose import diagnose, first_error, signal_of

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


SETUPTOOLS_BANNER = "# configuration would be ignored/result in error due to 'pyproject.toml' #"


def test_a_banner_naming_error_is_never_the_first_error() -> None:
    lines = [
        "!!",
        "        ########################################################################",
        SETUPTOOLS_BANNER,
        "warning: -Werror=return-type is set",
        "nvcc error   : 'cicc' died due to signal 11 (Invalid memory reference)",
        "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 139",
    ]
    assert first_error([SETUPTOOLS_BANNER, "bad things happened: Error 1"]) == "bad things happened: Error 1"
    assert first_error(lines) == "nvcc error   : 'cicc' died due to signal 11 (Invalid memory reference)"
    (d,) = diagnose(lines)
    assert d.id == "compiler-crashed"
    assert d.meaning == (
        "a compiler crashed ('cicc' died due to signal 11 (Invalid memory reference)); on a full disk or in "
        "exhausted memory cicc and cc1plus crash this way"
    )


def test_a_compiler_error_ranks_above_a_tool_error() -> None:
    lines = ["error: command 'gcc' failed", "csrc/scatter.cpp:12:5: error: 'foo' was not declared [-Werror=x]"]
    assert first_error(lines) == lines[1]
    nvcc = 'x.cu(7): error: identifier "y" is undefined'
    assert first_error([nvcc]) == nvcc


def test_signals_rank_first_and_a_full_disk_before_all() -> None:
    lines = [
        "csrc/a.cpp:1:1: error: expected ';'",
        "/usr/bin/ld: final link failed: No space left on device",
        "c++: fatal error: Killed signal terminated program cc1plus",
    ]
    assert [d.id for d in diagnose(lines)] == ["disk-full", "compiler-killed"]
    assert diagnose(["Killed"])[0].id == "compiler-killed"
    assert diagnose(["error: command 'nvcc' failed with exit code 137"])[0].id == "compiler-killed"


def test_an_exit_code_names_its_signal() -> None:
    crashed = signal_of(139)
    assert crashed is not None and crashed.id == "compiler-crashed"
    assert crashed.line == "exit code 139 (SIGSEGV)"
    killed = signal_of(-9)
    assert killed is not None and killed.id == "compiler-killed" and killed.line == "exit code -9 (SIGKILL)"
    assert signal_of(1) is None and signal_of(2) is None and signal_of(0) is None
