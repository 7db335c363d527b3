"""Parsers of tool output, fed with recorded outputs of real machines (tests/fixtures/machines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.host.gpu import parse_lspci, parse_nvidia_smi, parse_proc_driver_version
from srcbuild.host.mpi import parse_mpi_version
from srcbuild.host.system import parse_meminfo
from srcbuild.host.toolchain import cuda_matches, header_version, parse_nvcc_version

MACHINES = Path(__file__).resolve().parents[2] / "fixtures" / "machines"


def read(machine: str, name: str) -> str:
    return (MACHINES / machine / name).read_text()


def test_lspci_finds_only_nvidia_display_functions() -> None:
    gpus = parse_lspci(read("gt750m-mac", "lspci.txt"))
    assert [(g.slot, g.pci_id, g.marketing_name) for g in gpus] == [
        ("01:00.0", "10de:0fe9", "GeForce GT 750M Mac Edition")
    ]  # the HDMI audio function 10de:0e1b and the Intel GPU are skipped


def test_lspci_two_gpus_of_a_k80_board() -> None:
    gpus = parse_lspci(read("k80-server", "lspci.txt"))
    assert [(g.slot, g.device_id) for g in gpus] == [("04:00.0", 0x102D), ("05:00.0", 0x102D)]


def test_lspci_without_nvidia_gpu() -> None:
    text = "00:02.0 VGA compatible controller [0300]: Intel Corporation UHD Graphics 620 [8086:5917] (rev 07)\n"
    assert parse_lspci(text) == []


def test_nvidia_smi_csv_with_compute_cap() -> None:
    gpus, driver = parse_nvidia_smi(read("mx150-laptop", "nvidia-smi.csv"))
    assert driver == "470.256.02"
    assert [(g.name, g.cc, g.device_id) for g in gpus] == [("NVIDIA GeForce MX150", "6.1", None)]


def test_nvidia_smi_csv_old_driver_query_without_compute_cap() -> None:
    gpus, driver = parse_nvidia_smi("Tesla K80, 470.82.01, 0x102D10DE\nTesla K80, 470.82.01, 0x102D10DE\n")
    assert driver == "470.82.01"
    assert [(g.name, g.cc, g.device_id) for g in gpus] == [("Tesla K80", None, 0x102D)] * 2


def test_nvidia_smi_csv_full_query() -> None:
    gpus, _ = parse_nvidia_smi("NVIDIA GeForce GTX 750 Ti, 5.0, 580.95.05, 0x138010DE\n")
    assert (gpus[0].cc, gpus[0].driver, gpus[0].device_id) == ("5.0", "580.95.05", 0x1380)


def test_nvidia_smi_default_table_old_and_new_layouts() -> None:
    gpus, driver = parse_nvidia_smi(read("k80-server", "nvidia-smi.txt"))
    assert driver == "470.82.01"
    assert [g.name for g in gpus] == ["Tesla K80", "Tesla K80"]
    gpus, driver = parse_nvidia_smi(read("gtx1080", "nvidia-smi.txt"))
    assert driver == "545.29.06"
    assert [g.name for g in gpus] == ["NVIDIA GeForce GTX 1080"]


def test_proc_driver_version() -> None:
    assert parse_proc_driver_version(read("gt750m-mac", "proc-driver-version.txt")) == "418.226.00"
    open_module = (
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16)\n"
    )
    assert parse_proc_driver_version(open_module) == "580.65.06"
    assert parse_proc_driver_version("garbage") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mpicc: Open MPI 4.1.4 (Language: C)\n", ("openmpi", "4.1.4")),
        ("mpirun (Open MPI) 4.0.3\n\nReport bugs to http://www.open-mpi.org/community/help/\n", ("openmpi", "4.0.3")),
        ("MPICH Version:      4.0\nMPICH Release date: Fri Jan 21 10:42:29 CST 2022\n", ("mpich", "4.0")),
        ("HYDRA build details:\n    Version:                                 3.3.2\n", ("mpich", "3.3.2")),
        (
            "Intel(R) MPI Library for Linux* OS, Version 2021.6 Build 20220227 (id: 28877f3f32)\n",
            ("intel-mpi", "2021.6"),
        ),
        ("something else\n", None),
    ],
)
def test_mpi_version(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_mpi_version(text) == expected


def test_nvcc_version_and_pins() -> None:
    text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 9.2, V9.2.148\n"
    assert parse_nvcc_version(text) == "9.2.148"
    assert cuda_matches("9.2", "9.2.148")
    assert not cuda_matches("9.2", "9.1.85")
    assert not cuda_matches("11.4", "11.8.89")
    assert cuda_matches("11.8.89", "11.8.89")
    assert not cuda_matches("1.1", "11.1.105")


def test_cudnn_and_nccl_headers(tmp_path: Path) -> None:
    cudnn = tmp_path / "cudnn_version.h"
    cudnn.write_text("#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n")
    nccl = tmp_path / "nccl.h"
    nccl.write_text('#define NCCL_MAJOR 2\n#define NCCL_MINOR 9\n#define NCCL_PATCH 9\n#define NCCL_SUFFIX ""\n')
    assert header_version(cudnn, "CUDNN_", "PATCHLEVEL") == "8.5.0"
    assert header_version(nccl, "NCCL_", "PATCH") == "2.9.9"
    assert header_version(tmp_path / "missing.h", "NCCL_", "PATCH") is None


def test_meminfo() -> None:
    text = "MemTotal:       24684084 kB\nMemFree:        23000000 kB\nMemAvailable:   24306544 kB\n"
    assert parse_meminfo(text) == (24684084 * 1024, 24306544 * 1024)


def test_docker_runtimes() -> None:
    from srcbuild.host.system import parse_docker_runtimes

    text = (
        '{"io.containerd.runc.v2":{"path":"runc"},"nvidia":{"path":"nvidia-container-runtime"},'
        '"runc":{"path":"runc"}}\n'
    )
    assert parse_docker_runtimes(text) == ("io.containerd.runc.v2", "nvidia", "runc")
    assert parse_docker_runtimes("Cannot connect to the Docker daemon\n") is None
    assert parse_docker_runtimes("") is None


def test_host_facts_lookups() -> None:
    from srcbuild.host.facts import CudaToolkit, HeaderVersion, HostFacts

    home = Path("/opt/cuda-11.8")
    facts = HostFacts(
        cuda_toolkits=(CudaToolkit("11.8.89", home, home / "bin/nvcc", "CUDA_HOME"),),
        cudnn=(HeaderVersion("8.5.0", home / "include/cudnn_version.h"),),
    )
    assert facts.cuda_toolkit("11.8") is facts.cuda_toolkits[0]
    assert facts.cuda_toolkit("11.8.0") is None  # nvcc says 11.8.89
    assert facts.cuda_toolkit("11.7") is None
    assert facts.cudnn_version("8.5") is facts.cudnn[0]
    assert facts.cudnn_version("8") is facts.cudnn[0]
    assert facts.cudnn_version("8.4") is None


def test_lspci_verbose_kernel_output_is_read_too() -> None:
    text = (
        "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GK107M [GeForce GT 750M Mac Edition] "
        "[10de:0fe9] (rev a1) (prog-if 00 [VGA controller])\n"
        "\tSubsystem: Apple Inc. GK107M [GeForce GT 750M Mac Edition] [106b:0130]\n"
        "\tKernel driver in use: nouveau\n"
        "0000:01:00.1 Audio device [0403]: NVIDIA Corporation GK107 HDMI Audio Controller [10de:0e1b] (rev a1)\n"
        "\tSubsystem: Apple Inc. GK107 HDMI Audio Controller [106b:0130]\n"
    )
    assert [(g.slot, g.pci_id, g.marketing_name) for g in parse_lspci(text)] == [
        ("01:00.0", "10de:0fe9", "GeForce GT 750M Mac Edition")
    ]
