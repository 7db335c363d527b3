"""probe_host on this machine: the facts must agree with what the tools themselves say."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from srcbuild.host import probe_host
from srcbuild.host.toolchain import find_cuda
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.rules.host import host_findings
from tests.conftest import require_tool
from tests.worlds.cuda_home import make_home

pytestmark = pytest.mark.integration


def tool_output(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def test_probe_finds_the_toolchain(gcc11: Path, mpicc: Path, cuda13_home: Path) -> None:
    """The CUDA 13 nvcc tests/setup.sh lays out in a private directory is found through PATH (a
    stock machine has none in /usr/local/cuda)."""
    environ = {**os.environ, "PATH": f"{cuda13_home / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}
    host = probe_host(environ=environ)  # its time is bench/bench_startup.py's (doctor), not a test's
    gcc11_version = tool_output(str(gcc11), "-dumpfullversion").strip()
    assert any(g.major == 11 and g.version == gcc11_version for g in host.gccs)
    default_gcc = tool_output("gcc", "-dumpfullversion").strip()
    assert any(g.version == default_gcc for g in host.gccs)
    nvcc13 = tool_output(str(cuda13_home / "bin" / "nvcc"), "--version")
    assert any(f"V{t.version}" in nvcc13 for t in host.cuda_toolkits)
    ompi = tool_output(str(mpicc), "--showme:version")
    assert any(m.implementation == "openmpi" and f"Open MPI {m.version} " in ompi for m in host.mpi)
    assert host.resources is not None and host.resources.cores >= 1
    assert host.resources.memory_bytes and host.resources.memory_bytes > 1024**3
    assert (
        host.resources.disk_free_bytes
        == shutil.disk_usage(
            next(p for p in [host.resources.work_dir, *host.resources.work_dir.parents] if p.exists())
        ).free
        or host.resources.disk_free_bytes > 0
    )


def test_no_gpu_here_is_a_line_not_an_error() -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has an NVIDIA driver")
    host = probe_host(environ=os.environ)
    assert "nvidia-smi: not found (no NVIDIA driver, or not on PATH)" in host.missing
    assert host.driver is None


def test_find_cuda_honours_cuda_home(cuda118_home: Path) -> None:
    found = find_cuda("11.8", dict(os.environ, CUDA_HOME=str(cuda118_home)))
    assert found is not None and found.source == "CUDA_HOME" and found.version.startswith("11.8.")
    assert found.nvcc == cuda118_home / "bin" / "nvcc"
    env = {k: v for k, v in os.environ.items() if k != "CUDA_HOME"}
    assert find_cuda("9.2", env) is None


def test_fixture_tree_with_its_own_tools(tmp_path: Path) -> None:
    """A whole machine under a fixture root: CUDA 9.2 and gcc-7 that answer like the real ones."""
    home = tmp_path / "usr/local/cuda-9.2"
    (home / "bin").mkdir(parents=True)
    (home / "include").mkdir()
    script = (
        "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
        "echo 'Cuda compilation tools, release 9.2, V9.2.148'\n"
    )
    (home / "bin/nvcc").write_text(script)
    (home / "include/cudnn.h").write_text("#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5\n")
    make_home(home, "9.2")  # the headers and libraries a torch build needs (the complete-home contract)
    bindir = tmp_path / "usr/bin"
    bindir.mkdir(parents=True)
    (bindir / "gcc-7").write_text("#!/bin/sh\necho 7.5.0\n")
    (bindir / "g++-7").write_text("#!/bin/sh\necho 7.5.0\n")
    for exe in (home / "bin/nvcc", bindir / "gcc-7", bindir / "g++-7"):
        exe.chmod(0o755)
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Fri Oct 29 00:11:07 UTC 2021\n"
    )
    (tmp_path / "proc/meminfo").write_text("MemTotal:        8000000 kB\nMemAvailable:    6000000 kB\n")
    env = {"PATH": str(bindir), "HOME": str(tmp_path)}
    host = probe_host(environ=env, root=tmp_path, work_dir=tmp_path / "work")
    assert [(t.version, t.home, t.source) for t in host.cuda_toolkits] == [("9.2.148", home, "/usr/local/cuda-9.2")]
    assert [(g.major, g.version, g.path) for g in host.gccs] == [(7, "7.5.0", bindir / "gcc-7")]
    assert [c.version for c in host.cudnn] == ["7.6.5"]
    assert host.driver is not None and host.driver.version == "470.82.01"
    assert host.resources is not None and host.resources.memory_bytes == 8000000 * 1024
    paths = Paths.resolve(environ=os.environ)
    findings = host_findings(RecipeCatalog(paths).load("kepler-cu92"), host, paths)
    assert [f.rule for f in findings] == ["host-jobs"]
    (home / "include" / "cusparse.h").unlink()
    host = probe_host(environ=env, root=tmp_path, work_dir=tmp_path / "work")
    assert host.cuda_toolkits[0].missing == ("cusparse",)
    findings = host_findings(RecipeCatalog(paths).load("kepler-cu92"), host, paths)
    assert [f.rule for f in findings] == ["host-cuda-incomplete", "host-jobs"]


def test_preflight_kepler_cu92_on_this_machine(gcc11: Path) -> None:
    require_tool("no CUDA 9.2 here", not Path("/usr/local/cuda-9.2").exists())
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    host = probe_host(environ=env)
    paths = Paths.resolve(environ=os.environ)
    findings = host_findings(RecipeCatalog(paths).load("kepler-cu92"), host, paths)
    found_cuda = ", ".join(f"{t.version} in {t.home}" for t in host.cuda_toolkits) or "none"
    found_gcc = ", ".join(g.version for g in host.gccs)
    by_rule = {f.rule: f for f in findings}
    assert by_rule["host-cuda"].message == (
        "CUDA 9.2 (toolchain.cuda) is not installed: no nvcc reporting release 9.2 in CUDA_HOME, "
        f"/usr/local/cuda-9.2, /usr/local/cuda or on PATH (CUDA found here: {found_cuda})"
    )
    if host.gcc(7) is None:
        assert by_rule["host-gcc"].message == (
            "gcc 7 (toolchain.gcc) is not installed: no gcc-7 on PATH, in /usr/bin or /usr/local/bin "
            f"(gcc found here: {found_gcc})"
        )


def test_cuda_in_conda_envs(tmp_path: Path) -> None:
    """A conda installation's environments and srcbuild's own are searched for nvcc."""
    base = tmp_path / "miniforge3"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "conda").write_text("#!/bin/sh\nexit 0\n")
    env_nvcc = base / "envs" / "cu113" / "bin" / "nvcc"
    own_nvcc = tmp_path / "work" / "envs" / "kepler-cu102" / "bin" / "nvcc"
    for nvcc, release in ((env_nvcc, "11.3, V11.3.109"), (own_nvcc, "10.2, V10.2.89")):
        nvcc.parent.mkdir(parents=True)
        nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}'\n")
    for exe in (base / "bin" / "conda", env_nvcc, own_nvcc):
        exe.chmod(0o755)
    host = probe_host(environ={"PATH": "", "HOME": str(tmp_path)}, root=tmp_path, work_dir=tmp_path / "work")
    assert host.conda == (("conda", base / "bin" / "conda"),)
    assert [(t.version, t.source) for t in host.cuda_toolkits] == [
        ("11.3.109", "conda env cu113"),
        ("10.2.89", "srcbuild env kepler-cu102"),
    ]


OLD_SMI = """#!/bin/sh
# Answers like nvidia-smi of the R470 driver: no compute_cap field.
case "$1" in
  *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.'; exit 2 ;;
  --query-gpu=name,driver_version,pci.device_id)
    echo 'Tesla K80, 470.82.01, 0x102D10DE'
    echo 'Tesla K80, 470.82.01, 0x102D10DE' ;;
  *) exit 1 ;;
esac
"""


def test_old_driver_nvidia_smi_without_compute_cap(tmp_path: Path) -> None:
    """R470's nvidia-smi refuses compute_cap; srcbuild asks again without it and uses the PCI id."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text(OLD_SMI)
    (bindir / "nvidia-smi").chmod(0o755)
    host = probe_host(environ={"PATH": str(bindir)}, root=tmp_path, work_dir=tmp_path / "work")
    assert [(g.name, str(g.cc), g.pci_id, g.chip, g.source) for g in host.gpus] == [
        ("Tesla K80", "3.7", "10de:102d", "GK210", "nvidia-smi")
    ] * 2
    assert host.driver is not None and (host.driver.version, host.driver.source) == ("470.82.01", "nvidia-smi")
    assert not any(line.startswith("nvidia-smi") for line in host.missing)
