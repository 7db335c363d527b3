"""Reading back what torch's CMake decided, and each difference from the plan in one line."""

from __future__ import annotations

from srcbuild.canary.readout import Expect, Readout, compare, device_code_missing, find_output, gencode_archs
from srcbuild.knowledge.canary import era_for

# torch 1.13.1's own configure summary and cache (Debian's source, CUDA 11.8, cuDNN 8.5, Open MPI)
SUMMARY = """-- Found cuDNN: v8.5.0  (include: /tc/cudnn/include, library: /tc/cudnn/lib64/libcudnn.so)
-- Added CUDA NVCC flags for: -gencode;arch=compute_37,code=sm_37
-- ******** Summary ********
--   USE_CUDA              : ON
--     CUDA version        : 11.8
--     cuDNN version       : 8.5.0
--     CUDA host compiler  : /usr/bin/g++-11
--   USE_CUDNN             : ON
--   USE_MPI               : OFF
""".splitlines()
CACHE = """# This is the CMakeCache file.
CUDA_TOOLKIT_ROOT_DIR:PATH=/tc/cuda-11.8
CUDNN_LIBRARY_PATH:FILEPATH=/tc/cudnn/lib64/libcudnn.so
PYTHON_EXECUTABLE:FILEPATH=/env/bin/python
USE_NUMPY:BOOL=ON
NUMPY_INCLUDE_DIR:PATH=/other/site-packages/numpy/core/include
"""
NINJA = "\n".join(
    [
        "build caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/FillKernel.cu.o: "
        "CUDA_COMPILER__torch_cuda_Release /s/aten/src/ATen/native/cuda/FillKernel.cu || "
        "cmake_object_order_depends_target_torch_cuda",
        "  FLAGS = -Xfatbin -compress-all -gencode arch=compute_37,code=sm_37 -Xcudafe --diag_suppress=cc_clobber",
        "build lib/libc10_cuda.so: CXX_SHARED_LIBRARY_LINKER__c10_cuda_Release "
        "c10/cuda/CMakeFiles/c10_cuda.dir/CUDAStream.cpp.o",
        "",
    ]
)


def expects(mpi: str = "1") -> list[Expect]:
    return [
        Expect("cuda-version", "CUDA version", "11.8", "prefix", ("summary:CUDA version",), "toolchain.cuda"),
        Expect("cuda-home", "CUDA home", "/tc/cuda-11.8", "path", ("cache:CUDA_TOOLKIT_ROOT_DIR",)),
        Expect("archs", "CUDA archs", "3.7", "archs", ()),
        Expect("cudnn-version", "cuDNN version", "8.5", "prefix", ("summary:cuDNN version",), when="summary:USE_CUDNN"),
        Expect("cudnn-library", "cuDNN library", "/tc/cudnn/lib64", "under", ("cache:CUDNN_LIBRARY_PATH",)),
        Expect("mpi", "USE_MPI", mpi, "on", ("summary:USE_MPI",), "mpi"),
        Expect("numpy", "numpy headers", "/env", "under", ("cache:NUMPY_INCLUDE_DIR",), when="cache:USE_NUMPY"),
    ]


def test_every_difference_names_plan_cmake_and_where() -> None:
    readout = Readout.read(CACHE, SUMMARY, NINJA)
    checked, bad = compare(expects(), readout)
    assert len(checked) == 7
    assert [m.line() for m in bad] == [
        "USE_MPI: the plan has ON, CMake has OFF (OFF) (summary:USE_MPI)",
        "numpy headers: the plan has /env, CMake has /other/site-packages/numpy/core/include "
        "(cache:NUMPY_INCLUDE_DIR)",
    ]


def test_a_cudnn_from_elsewhere_and_a_missing_value_are_mismatches() -> None:
    cache = CACHE.replace("/tc/cudnn/lib64/libcudnn.so", "/env/lib/libcudnn.so").replace("CUDA_TOOLKIT", "X")
    _, bad = compare(expects(mpi="0"), Readout.read(cache, SUMMARY, NINJA))
    assert [m.line() for m in bad][:2] == [
        "CUDA home: the plan has /tc/cuda-11.8, CMake has nothing (no cache:CUDA_TOOLKIT_ROOT_DIR)",
        "cuDNN library: the plan has /tc/cudnn/lib64, CMake has /env/lib/libcudnn.so (cache:CUDNN_LIBRARY_PATH)",
    ]


def test_gencode_flags_and_archs() -> None:
    assert gencode_archs(NINJA) == (frozenset({37}), frozenset())
    assert gencode_archs("-gencode=arch=compute_35,code=[sm_35,compute_35]") == (frozenset({35}), frozenset({35}))
    readout = Readout.read("", [], NINJA.replace("compute_37,code=sm_37", "compute_30,code=sm_30"))
    _, bad = compare([Expect("archs", "CUDA archs", "3.7+PTX", "archs", ())], readout)
    assert bad[0].line() == (
        "CUDA archs: the plan has sm_37 compute_37, CMake has sm_30 (-gencode flags of build/build.ninja)"
    )
    assert device_code_missing("3.5;3.7+PTX", [35, 37], []) == ["compute_37"]


def test_canary_targets_are_found_by_suffix_in_the_era_order() -> None:
    era = era_for("v1.13.1")
    assert era is not None and era.configure == ("build", "--cmake-only")
    outputs = Readout.read("", [], NINJA).outputs
    assert find_output(outputs, era.units[0].outputs) == (
        "caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/FillKernel.cu.o"
    )
    assert find_output(outputs, ["cuda/Fill.cu.o"]) is None
    assert era_for("v1.0.1") is None and era_for("main") is None
