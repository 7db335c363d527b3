"""NVIDIA-channel-style CUDA packages built from a real CUDA 11.8 home, for a local conda channel.

``cuda_channel_packages(home)`` returns the packages the ``conda`` provider asks the ``nvidia``
channel for, laid out as NVIDIA's conda packages are: ``cuda-nvcc`` holds ``bin/nvcc`` (a copy of
the home's), a ``bin/nvcc.profile`` that looks for headers and libraries under
``targets/x86_64-linux/`` (as the profile of NVIDIA's own installs does) and the rest of the
compiler (ptxas, fatbinary, cudafe++, nvlink, nvvm/) as links to the home's files;
``cuda-cudart-dev`` holds the home's headers, libcudart (shared and static), libcudadevrt.a and
the driver stub ``lib/stubs/libcuda.so`` under ``targets/x86_64-linux/``;
``cuda-cuobjdump`` links the home's cuobjdump; ``cuda-libraries-dev`` links the home's other
libraries (cuBLAS, cuSPARSE, ...: a complete home's). ``cuda-nvtx`` and ``cuda-cupti`` are there
so the provider's specs solve.

``magma_package(cuda, work)`` is the pytorch channel's ``magma-cudaXY`` as torch's FindMAGMA sees
it: ``include/magma.h`` and a ``lib/libmagma.so`` compiled here with the host's gcc.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild import proc
from tests.worlds.conda_channel import FakePackage

TARGET = "targets/x86_64-linux"

CONDA_NVCC_PROFILE = """TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib:$(TOP)/nvvm/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/targets/x86_64-linux/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/targets/x86_64-linux/lib/stubs" "-L$(TOP)/targets/x86_64-linux/lib"
"""

COMPILER_LINKS = ("ptxas", "fatbinary", "cudafe++", "nvlink", "bin2c", "cu++filt", "nvprune", "crt")


def _tree(root: Path, under: str, pattern: str = "*") -> tuple[dict[str, bytes], dict[str, str]]:
    """Every file below ``root`` matching ``pattern`` as ``under/<relative path>``: contents, and
    links as links."""
    files: dict[str, bytes] = {}
    links: dict[str, str] = {}
    for path in sorted(root.rglob(pattern)):
        name = f"{under}/{path.relative_to(root)}"
        if path.is_symlink():
            links[name] = str(path.readlink())
        elif path.is_file():
            files[name] = path.read_bytes()
    return files, links


def cuda_channel_packages(home: Path, nvcc_version: str = "11.8.89") -> list[FakePackage]:
    release = ".".join(nvcc_version.split(".")[:2])
    nvcc = FakePackage(
        "cuda-nvcc",
        nvcc_version,
        files={"bin/nvcc": (home / "bin" / "nvcc").read_bytes(), "bin/nvcc.profile": CONDA_NVCC_PROFILE.encode()},
        symlinks={
            **{f"bin/{name}": str(home / "bin" / name) for name in COMPILER_LINKS if (home / "bin" / name).exists()},
            "nvvm": str(home / "nvvm"),
        },
    )
    headers, header_links = _tree(home / "include", f"{TARGET}/include")
    libs, lib_links = _tree(home / "lib", f"{TARGET}/lib", "libcudart*")  # not the home's cuBLAS & co.
    static, _ = _tree(home / "lib", f"{TARGET}/lib", "libcudadevrt.a")
    stubs, _ = _tree(home / "lib" / "stubs", f"{TARGET}/lib/stubs", "libcuda.so")
    libs.update({**static, **stubs})
    cudart = FakePackage(
        "cuda-cudart-dev", nvcc_version, files={**headers, **libs}, symlinks={**header_links, **lib_links}
    )
    cuobjdump = FakePackage("cuda-cuobjdump", "11.8.86", symlinks={"bin/cuobjdump": str(home / "bin" / "cuobjdump")})
    # cuBLAS, cuSPARSE, ... as links to the home's own files (a complete home carries them)
    library_links = {
        f"{TARGET}/lib/{path.name}": str(path.resolve())
        for path in sorted((home / "lib").glob("lib*.so*"))
        if not path.name.startswith("libcudart")
    }
    libraries = FakePackage(
        "cuda-libraries-dev", f"{release}.0", depends=(f"cuda-cudart-dev {release}.*",), symlinks=library_links
    )
    nvtx = FakePackage("cuda-nvtx", "11.8.86")
    cupti = FakePackage("cuda-cupti", "11.8.87")
    return [nvcc, cudart, cuobjdump, libraries, nvtx, cupti]


MAGMA_H = "#ifndef MAGMA_H\n#define MAGMA_H\nint magma_init(void);\n#endif\n"
MAGMA_C = '#include "magma.h"\nint magma_init(void) { return 0; }\n'


def magma_package(cuda: str, work: Path, gcc: str = "gcc") -> FakePackage:
    """``magma-cuda<XY>`` 2.6.1 holding a real shared library built from a one-function source."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "magma.h").write_text(MAGMA_H)
    (work / "magma.c").write_text(MAGMA_C)
    built = proc.run([gcc, "-shared", "-fPIC", "-o", "libmagma.so", "magma.c"], cwd=work)
    assert built.ok, built.tail
    return FakePackage(
        "magma-cuda" + cuda.replace(".", ""),
        "2.6.1",
        build="1",
        files={"include/magma.h": MAGMA_H.encode(), "lib/libmagma.so": (work / "libmagma.so").read_bytes()},
    )
