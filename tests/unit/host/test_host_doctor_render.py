"""doctor's report for constructed machine facts: driver notes, gcc hosting, verdict lines."""

from __future__ import annotations

import os
from pathlib import Path

from srcbuild.advice.doctor import AFTER_INSTALL, CANNOT, READY, diagnose, gcc_hosts
from srcbuild.advice.render import render_doctor
from srcbuild.capability import ComputeCapability
from srcbuild.host.facts import CudaToolkit, DriverInfo, GccInstall, GpuInfo, HeaderVersion, HostFacts, Resources
from srcbuild.host.jobs import GIB
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog

CUDA118 = Path("/usr/local/cuda-11.8")
K80_BOX = HostFacts(
    gpus=(GpuInfo("Tesla K80", ComputeCapability.parse("3.7"), "nvidia-smi", "10de:102d", "GK210"),),
    driver=DriverInfo("470.82.01", "nvidia-smi"),
    cuda_toolkits=(CudaToolkit("11.8.89", CUDA118, CUDA118 / "bin/nvcc", "/usr/local/cuda-11.8"),),
    cudnn=(HeaderVersion("8.5.0", CUDA118 / "include/cudnn_version.h"),),
    gccs=(GccInstall(11, "11.4.0", Path("/usr/bin/gcc-11"), Path("/usr/bin/g++-11")),),
    resources=Resources(16, 64 * GIB, 60 * GIB, Path("/w"), 500 * GIB),
)  # fmt: skip


def test_gcc_hosts() -> None:
    kb = load_knowledge()
    assert gcc_hosts(kb, 7) == "9.2 to 13.5"  # CUDA 9.2 is the first to accept gcc 7
    assert gcc_hosts(kb, 5) == "8.0 to 11.3"  # CUDA 11.4 and later: gcc >= 6 (Spack), 13.3+ carried
    assert gcc_hosts(kb, 11).startswith("11.4 to ")


def test_k80_box_report() -> None:
    paths = Paths.resolve(environ=os.environ)
    recipes = RecipeCatalog(paths).load_all()
    report = diagnose(load_knowledge(), K80_BOX, recipes, paths)
    assert report.driver_cuda == "11.4"
    assert report.driver_notes == ("Tesla K80: R470 is the last branch for Kepler; this is it",)
    assert report.jobs == 16
    status = {v.recipe: v.status for v in report.verdicts}
    assert status["kepler-k80-cu118"] == READY
    assert status["kepler-k80-cu118-mpi"] == AFTER_INSTALL
    assert status["kepler-cu92"] == AFTER_INSTALL
    assert CANNOT not in status.values()  # every catalog recipe passes the rules
    text = render_doctor(report)
    assert "GPUs:\n  Tesla K80 (GK210, pci 10de:102d), from nvidia-smi: compute capability 3.7\n" in text
    assert (
        "Driver:\n  470.82.01, from nvidia-smi; runs CUDA up to 11.4 (11.8 through CUDA minor-version compatibility)\n"
        in text
    )
    assert "  kepler-k80-cu118: can build here now\n" in text
    assert "  kepler-k80-cu118-mpi: can build after installing Open MPI 4.1\n" in text
    assert "  maxwell-cu126: can build after installing CUDA 12.6, gcc 13, cuDNN 9.10 for CUDA 12.6\n" in text
    wont_run = (
        "    - its wheel will not run on this machine's GPU (Tesla K80, 3.7): It builds for 5.0, 5.2, not for 3.7"
    )
    assert wont_run + "\n" in text
    # doctor leads with what to install, the same answer recommend gives
    assert (
        "  no build needed: pip install torch==2.7.1 torchvision==0.22.1 --index-url https://download.pytorch.org/whl/cu118\n"
        in text
    )
    assert "MAX_JOBS: 16 (16 cores; 64.0 GiB of memory allows 20 jobs at 3 GiB each)\n" in text
