"""Host preflight against constructed machine facts: every miss at once, exact messages."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from srcbuild.findings import Severity
from srcbuild.host.facts import CudaToolkit, GccInstall, HeaderVersion, HostFacts, MpiInstall, Resources
from srcbuild.host.jobs import GIB
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.rules.host import host_findings


@pytest.fixture
def paths() -> Paths:
    return Paths.resolve(environ=os.environ)


def load(paths: Paths, name: str) -> Recipe:
    return RecipeCatalog(paths).load(name)


def machine(**changes: object) -> HostFacts:
    """A Debian 12 box: CUDA 13.0, gcc 11 and 12, Open MPI 4.1.4, 24 GiB, 2 cores, 80 GiB free."""
    base = HostFacts(
        cuda_toolkits=(
            CudaToolkit(
                "13.0.88", Path("/usr/local/cuda-13.0"), Path("/usr/local/cuda-13.0/bin/nvcc"), "/usr/local/cuda"
            ),
        ),
        gccs=(
            GccInstall(11, "11.3.0", Path("/usr/bin/gcc-11"), Path("/usr/bin/g++-11")),
            GccInstall(12, "12.2.0", Path("/usr/bin/gcc-12"), Path("/usr/bin/g++-12")),
        ),
        mpi=(
            MpiInstall("openmpi", "4.1.4", Path("/usr/bin/mpicc"), Path("/usr/bin/mpicxx"), "mpicc --showme:version"),
        ),
        resources=Resources(2, 24 * GIB, 23 * GIB, Path("/w"), 80 * GIB),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_kepler_cu92_on_debian12_lacks_cuda_gcc_and_cudnn(paths: Paths) -> None:
    findings = host_findings(load(paths, "kepler-cu92"), machine(), paths)
    assert [(f.rule, f.severity) for f in findings] == [
        ("host-cuda", Severity.ERROR),
        ("host-gcc", Severity.ERROR),
        ("host-cudnn", Severity.ERROR),
        ("host-jobs", Severity.INFO),
    ]
    cuda, gcc, cudnn, jobs = findings
    assert cuda.message == (
        "CUDA 9.2 (toolchain.cuda) is not installed: no nvcc reporting release 9.2 in CUDA_HOME, "
        "/usr/local/cuda-9.2, /usr/local/cuda or on PATH (CUDA found here: 13.0.88 in /usr/local/cuda-13.0)"
    )
    assert cuda.fix == (
        "run `srcbuild toolchain install --recipe kepler-cu92` (fetches it into a private prefix); or "
        "install CUDA 9.2 from NVIDIA's CUDA Toolkit archive (https://developer.nvidia.com/cuda-toolkit-archive) "
        "with the runfile: `sh cuda_9.2*_linux.run --silent --toolkit --toolkitpath=/usr/local/cuda-9.2`; "
        "srcbuild looks in /usr/local/cuda-9.2, or set CUDA_HOME to the toolkit's directory"
    )
    assert gcc.message == (
        "gcc 7 (toolchain.gcc) is not installed: no gcc-7 on PATH, in /usr/bin or /usr/local/bin "
        "(gcc found here: 11.3.0, 12.2.0)"
    )
    assert gcc.fix == (
        "run `srcbuild toolchain install --recipe kepler-cu92` (fetches it into a private prefix); or "
        "install it with `sudo apt-get install gcc-7 g++-7` (packaged in Ubuntu 18.04 and 20.04), "
        "or put a gcc 7 on PATH as gcc-7 (or gcc)"
    )
    assert cudnn.message.startswith("cuDNN 7.6 (toolchain.cudnn) is not installed:")
    assert cudnn.fix.startswith("run `srcbuild toolchain install --recipe kepler-cu92` (fetches it")
    assert "cuDNN 7.6 for CUDA 9.2" in cudnn.fix and "CUDNN_INCLUDE_DIR" in cudnn.fix
    assert jobs.message == "MAX_JOBS=2: 2 cores; 24.0 GiB of memory allows 7 jobs at 3 GiB each"


def test_everything_present_leaves_only_the_jobs_line(paths: Paths) -> None:
    host = machine(
        cuda_toolkits=(CudaToolkit("11.8.89", Path("/opt/cuda-11.8"), Path("/opt/cuda-11.8/bin/nvcc"), "CUDA_HOME"),),
        cudnn=(HeaderVersion("8.5.0", Path("/opt/cuda-11.8/include/cudnn_version.h")),),
    )
    findings = host_findings(load(paths, "kepler-k80-cu118-mpi"), host, paths)
    assert [f.rule for f in findings] == ["host-jobs"]


def test_mpi_of_another_version_is_a_miss(paths: Paths) -> None:
    findings = host_findings(load(paths, "kepler-cu92-mpi"), machine(), paths)
    mpi = next(f for f in findings if f.rule == "host-mpi")
    assert mpi.message == (
        "Open MPI 4.0 (mpi.version) is not installed: no mpicc and mpicxx of it on PATH or under MPI_HOME "
        "(MPI found here: Open MPI 4.1.4 (/usr/bin/mpicc))"
    )
    assert mpi.fix == (
        "run `srcbuild toolchain install --recipe kepler-cu92-mpi` (fetches it into a private prefix); or "
        "install it with `sudo apt-get install libopenmpi-dev openmpi-bin` (Open MPI 4.0 is in Ubuntu 20.04 only), "
        "or set MPI_HOME to an installation of Open MPI 4.0 (its bin/ holds mpicc)"
    )


def test_no_mpi_at_all(paths: Paths) -> None:
    findings = host_findings(load(paths, "pascal-cu126-mpi"), machine(mpi=()), paths)
    assert "(MPI found here: none)" in next(f for f in findings if f.rule == "host-mpi").message


def test_cuda_11_8_hint_names_debian_and_nvidia_packages(paths: Paths) -> None:
    cuda = host_findings(load(paths, "kepler-k80-cu118"), machine(), paths)[0]
    assert "`sudo apt-get install nvidia-cuda-toolkit` on Debian 12 (non-free)" in cuda.fix
    assert "`sudo apt-get install cuda-toolkit-11-8` from NVIDIA's apt repository" in cuda.fix


def test_disk_and_memory(paths: Paths) -> None:
    host = machine(resources=Resources(8, 4 * GIB, 3 * GIB, Path("/w"), 3 * GIB))
    findings = {f.rule: f for f in host_findings(load(paths, "pascal-cu126"), host, paths)}
    assert findings["host-disk"].severity is Severity.ERROR
    assert findings["host-disk"].message == (
        f"only 3.0 GiB free in the work directory {paths.work_dir}; a build needs about 5 GiB"
    )
    assert findings["host-memory"].severity is Severity.WARNING
    assert findings["host-jobs"].message.startswith("MAX_JOBS=1: 4.0 GiB of memory allows 1 jobs")
    host = machine(resources=Resources(8, 64 * GIB, 60 * GIB, Path("/w"), 12 * GIB))
    disk = next(f for f in host_findings(load(paths, "pascal-cu126"), host, paths) if f.rule == "host-disk")
    assert disk.severity is Severity.WARNING


def test_pieces_from_the_recipe_conda_env_are_not_required(paths: Paths) -> None:
    recipe = load(paths, "kepler-cu92")
    env = dataclasses.replace(recipe.env, conda=("gcc_linux-64=7", "cudnn=7.6"))
    findings = host_findings(dataclasses.replace(recipe, env=env), machine(), paths)
    assert [f.rule for f in findings] == ["host-cuda", "host-jobs"]


def test_the_host_pythons_headers_are_a_preflight_error_naming_their_package(tmp_path: Path) -> None:
    """A venv build environment compiles against the host Python's Python.h (`plan` says it at
    once: tests/integration/plan/test_python_headers.py)."""
    from srcbuild.rules.host import check_python_headers

    include = tmp_path / "include"
    include.mkdir()
    (missing,) = check_python_headers("3.11", include)
    assert missing.severity is Severity.ERROR and missing.field == "toolchain.python"
    assert missing.message == (
        f"Python 3.11's headers are not installed ({include}/Python.h is missing): the build environment is a "
        "venv of the host's Python, and every extension compiles against them"
    )
    assert "sudo apt-get install python3.11-dev" in missing.fix and "--env-backend rattler" in missing.fix
    (include / "Python.h").write_text("")
    assert check_python_headers("3.11", include) == []
