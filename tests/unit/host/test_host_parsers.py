"""The parsers of tool output (``srcbuild.host.parsers``), fed with outputs recorded on real machines
(tests/fixtures/machines, tests/fixtures/paste) and with the outputs the tools' versions print."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.host.facts import version_matches
from srcbuild.host.parsers import (
    GpuListing,
    ListedGpu,
    parse_docker_runtimes,
    parse_gcc_version,
    parse_header_version,
    parse_lspci_lines,
    parse_lspci_mm,
    parse_meminfo,
    parse_mpi_version,
    parse_nvcc_version,
    parse_proc_driver_version,
    parse_proc_information,
    parse_smi_csv,
    parse_smi_list,
    parse_smi_table,
    read_paste,
)
from srcbuild.host.toolchain import header_version

MACHINES = Path(__file__).resolve().parents[2] / "fixtures" / "machines"
PASTES = Path(__file__).resolve().parents[2] / "fixtures" / "paste"


def read(machine: str, name: str) -> str:
    return (MACHINES / machine / name).read_text()


def gpus(listing: GpuListing | None) -> list[tuple[str | None, str | None, int | None, str | None]]:
    assert listing is not None
    return [(g.name, g.chip, g.device_id, g.cc) for g in listing.gpus]


def test_lspci_nn_finds_only_nvidia_display_functions() -> None:
    listing = parse_lspci_lines(read("gt750m-mac", "lspci.txt"))
    assert listing is not None and listing.format == "lspci -nn"
    # the HDMI audio function 10de:0e1b and the Intel GPU are skipped
    assert gpus(listing) == [("GeForce GT 750M Mac Edition", "GK107M", 0x0FE9, None)]


def test_lspci_nn_two_gpus_of_a_k80_board() -> None:
    assert gpus(parse_lspci_lines(read("k80-server", "lspci.txt"))) == [("Tesla K80", "GK210GL", 0x102D, None)] * 2


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        ("gt750m-laptop", ("GeForce GT 750M", "GK107M", 0x0FE4, None)),
        ("gtx1080", ("GeForce GTX 1080", "GP104", 0x1B80, None)),
        ("gtx750ti", ("GeForce GTX 750 Ti", "GM107", 0x1380, None)),
        ("gtx860m-kepler", ("GeForce GTX 860M", "GK104M", 0x119A, None)),
        ("gtx860m-maxwell", ("GeForce GTX 860M", "GM107M", 0x1392, None)),
        ("mx150-laptop", ("GeForce MX150", "GP108M", 0x1D10, None)),
    ],
)
def test_lspci_nn_of_each_recorded_machine(machine: str, expected: tuple[str, str, int, None]) -> None:
    """What the live probe runs (``lspci -nn``), read by the parser a paste's lspci lines go through."""
    assert gpus(parse_lspci_lines(read(machine, "lspci.txt"))) == [expected]


def test_lspci_without_nvidia_gpu() -> None:
    text = "00:02.0 VGA compatible controller [0300]: Intel Corporation UHD Graphics 620 [8086:5917] (rev 07)\n"
    listing = parse_lspci_lines(text)
    assert listing is not None and listing.gpus == ()  # an lspci output, with no NVIDIA GPU in it
    assert parse_lspci_lines("no lspci here\n") is None


def test_lspci_mm_and_plain_lspci_pastes() -> None:
    assert gpus(parse_lspci_mm((PASTES / "lspci-mm-gtx660-oem.txt").read_text())) == [
        ("GeForce GTX 660 OEM", "GK104", None, None)
    ]
    plain = parse_lspci_lines((PASTES / "lspci-mx150.txt").read_text())
    assert plain is not None and plain.format == "lspci"  # no [class] or [vendor:device] ids
    assert gpus(plain) == [("GeForce MX150", "GP108M", None, None)]


def test_nvidia_smi_csv_with_compute_cap() -> None:
    listing = parse_smi_csv(read("mx150-laptop", "nvidia-smi.csv"))
    assert listing is not None and listing.driver == "470.256.02"
    assert gpus(listing) == [("NVIDIA GeForce MX150", None, None, "6.1")]


def test_nvidia_smi_csv_old_driver_query_without_compute_cap() -> None:
    listing = parse_smi_csv("Tesla K80, 470.82.01, 0x102D10DE\nTesla K80, 470.82.01, 0x102D10DE\n")
    assert listing is not None and listing.driver == "470.82.01"
    assert gpus(listing) == [("Tesla K80", None, 0x102D, None)] * 2


def test_nvidia_smi_csv_full_query() -> None:
    listing = parse_smi_csv("NVIDIA GeForce GTX 750 Ti, 5.0, 580.95.05, 0x138010DE\n")
    assert listing is not None and listing.format == "nvidia-smi --query-gpu csv,noheader"
    assert (gpus(listing), listing.driver) == ([("NVIDIA GeForce GTX 750 Ti", None, 0x1380, "5.0")], "580.95.05")


def test_nvidia_smi_csv_with_its_header() -> None:
    listing = parse_smi_csv((PASTES / "smi-query-h100.csv").read_text())
    assert listing is not None and listing.format == "nvidia-smi --query-gpu csv"
    assert (gpus(listing), listing.driver) == ([("NVIDIA H100 80GB HBM3", None, 0x2330, "9.0")], "580.95.05")


def test_nvidia_smi_default_table_old_and_new_layouts() -> None:
    old = parse_smi_table(read("k80-server", "nvidia-smi.txt"))
    assert old is not None and (old.format, old.driver) == ("nvidia-smi table (R470)", "470.82.01")
    assert [g.name for g in old.gpus] == ["Tesla K80", "Tesla K80"]
    new = parse_smi_table(read("gtx1080", "nvidia-smi.txt"))
    assert new is not None and new.driver == "545.29.06"
    assert [g.name for g in new.gpus] == ["NVIDIA GeForce GTX 1080"]
    cut = parse_smi_table((PASTES / "smi-r470-truncated.txt").read_text())
    assert cut is not None and [(g.name, g.truncated) for g in cut.gpus] == [("NVIDIA GeForce ...", True)]
    assert parse_smi_csv(read("k80-server", "nvidia-smi.txt")) is None  # a table is no CSV


def test_nvidia_smi_list_and_proc_information() -> None:
    assert gpus(parse_smi_list((PASTES / "smi-L-mx150.txt").read_text())) == [
        ("NVIDIA GeForce MX150", None, None, None)
    ]
    assert gpus(parse_proc_information((PASTES / "proc-information-gt750m.txt").read_text())) == [
        ("GeForce GT 750M", None, None, None)
    ]


def test_a_paste_of_three_outputs_gives_each() -> None:
    text = "".join(read("k80-server", name) for name in ("nvidia-smi.txt", "proc-driver-version.txt", "lspci.txt"))
    parts = read_paste(text)
    assert [(p.format, p.driver, len(p.gpus)) for p in parts] == [
        ("nvidia-smi table (R470)", "470.82.01", 2),
        ("/proc/driver/nvidia/version", "470.82.01", 0),
        ("lspci -nn", None, 2),
    ]
    assert parts[2].gpus[0] == ListedGpu(name="Tesla K80", chip="GK210GL", device_id=0x102D)


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
    assert parse_nvcc_version("nvcc: command not found\n") is None
    assert version_matches("9.2", "9.2.148")
    assert not version_matches("9.2", "9.1.85")
    assert not version_matches("11.4", "11.8.89")
    assert version_matches("11.8.89", "11.8.89")
    assert not version_matches("1.1", "11.1.105")


def test_gcc_dumpversion() -> None:
    assert parse_gcc_version("12.2.0\n") == "12.2.0"
    assert parse_gcc_version("4.9\n") == "4.9"  # gcc before 7 ignores -dumpfullversion
    assert parse_gcc_version("gcc: error: unrecognized command-line option\n") is None


def test_cudnn_and_nccl_headers(tmp_path: Path) -> None:
    cudnn = tmp_path / "cudnn_version.h"
    cudnn.write_text("#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n")
    nccl = tmp_path / "nccl.h"
    nccl.write_text('#define NCCL_MAJOR 2\n#define NCCL_MINOR 9\n#define NCCL_PATCH 9\n#define NCCL_SUFFIX ""\n')
    assert header_version(cudnn, "CUDNN_", "PATCHLEVEL") == "8.5.0"
    assert header_version(nccl, "NCCL_", "PATCH") == "2.9.9"
    assert header_version(tmp_path / "missing.h", "NCCL_", "PATCH") is None
    assert parse_header_version("#define CUDNN_MAJOR 7\n", "CUDNN_", "PATCHLEVEL") is None  # no minor


def test_meminfo() -> None:
    text = "MemTotal:       24684084 kB\nMemFree:        23000000 kB\nMemAvailable:   24306544 kB\n"
    assert parse_meminfo(text) == (24684084 * 1024, 24306544 * 1024)


def test_docker_runtimes() -> None:
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
    assert gpus(parse_lspci_lines(text)) == [("GeForce GT 750M Mac Edition", "GK107M", 0x0FE9, None)]


def test_every_output_of_an_h100_machine() -> None:
    """What the probe asks, recorded on an H100 server (driver R580, open kernel module, CUDA 13.0,
    Open MPI 4.1.6, gcc 13.3)."""
    listing = parse_smi_csv(read("h100-server", "nvidia-smi.csv"))
    assert listing is not None and listing.driver == "580.159.04"
    assert gpus(listing) == [("NVIDIA H100 80GB HBM3", None, 0x2330, "9.0")]
    listed = parse_smi_list(read("h100-server", "nvidia-smi-L.txt"))
    assert gpus(listed) == [("NVIDIA H100 80GB HBM3", None, None, None)]
    assert parse_proc_driver_version(read("h100-server", "proc-driver-version.txt")) == "580.159.04"
    assert parse_nvcc_version(read("h100-server", "nvcc-version.txt")) == "13.0.88"
    assert parse_mpi_version(read("h100-server", "mpirun-version.txt")) == ("openmpi", "4.1.6")
    assert parse_gcc_version(read("h100-server", "gcc-dumpversion.txt")) == "13.3.0"
    assert parse_meminfo(read("h100-server", "meminfo.txt")) == (131981020 * 1024, 131499588 * 1024)
