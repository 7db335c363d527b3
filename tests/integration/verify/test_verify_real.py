"""Verification of wheels holding libraries compiled by the real nvcc 11.8 / 13.0 and mpicc."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srcbuild.capability import ComputeCapability
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.verify.cuobjdump import cross_check
from srcbuild.verify.elfdeps import read_dynamic
from srcbuild.verify.fatbin import scan_elf
from srcbuild.verify.kernels import Kernels
from srcbuild.verify.report import verify_wheel
from tests.worlds.wheels import write_wheel

pytestmark = pytest.mark.integration
CC = ComputeCapability.parse
K80_TAG = "cp310-cp310-linux_x86_64"


def recipe(name: str) -> Recipe:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load(name)


def wheel_of(tmp: Path, version: str, libs: dict[str, Path], cuda: str = "11.8", tag: str = K80_TAG) -> Path:
    files: dict[str, Path | bytes] = {f"torch/lib/{name}": path for name, path in libs.items()}
    files["torch/version.py"] = f"cuda = '{cuda}'\n".encode()
    return write_wheel(tmp, "torch", version, tag, files)


def test_parser_matches_cuobjdump_118(lib118: Path, lib118_ptx: Path, cuobjdump118: Path) -> None:
    for lib in (lib118, lib118_ptx):
        entries = scan_elf(lib)
        check = cross_check(cuobjdump118, lib, entries)
        assert check.status == "match", check
    assert Kernels.from_entries(scan_elf(lib118)) == Kernels(frozenset({35, 37, 50}), frozenset({50}))
    assert Kernels.from_entries(scan_elf(lib118_ptx)) == Kernels(frozenset(), frozenset({50}))
    assert [e.version for e in scan_elf(lib118_ptx)] == [(7, 8)]  # PTX ISA 7.8 = CUDA 11.8


def test_cuobjdump_118_lists_a_library_cut_in_pieces(
    lib118: Path, cuobjdump118: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pieces of one container each, cuobjdump lists every image the parser finds, as it does
    for the whole library (cuobjdump reads a bare fat binary as it reads the library)."""
    import srcbuild.verify.cuobjdump as tool

    monkeypatch.setattr(tool, "PIECE", 1)
    section = tool.fatbin_section(lib118)
    assert section is not None and len(list(tool.pieces(lib118, *section, 1))) >= 1
    check = cross_check(cuobjdump118, lib118, scan_elf(lib118))
    assert check.status == "match", check
    assert sorted(set(check.tool_entries)) == [("ptx", 50), ("sass", 35), ("sass", 37), ("sass", 50)]


def test_cuda13_library_and_cuobjdump_118_refusal(lib13: Path, cuobjdump118: Path) -> None:
    entries = scan_elf(lib13)
    assert Kernels.from_entries(entries) == Kernels(frozenset({75, 80}), frozenset({80}))
    with open(lib13, "rb") as f:
        assert read_dynamic(f).cudart == "libcudart.so.13"
    check = cross_check(cuobjdump118, lib13, entries)
    assert check.status == "unsupported"
    assert "has been removed" in check.message


def test_k80_wheel_passes_and_kepler30_fails(tmp_path: Path, lib118: Path) -> None:
    wheel = wheel_of(tmp_path, "2.0.0+cu118.sm35.sm37", {"libtorch_cuda.so": lib118})
    good = verify_wheel(wheel, recipe("kepler-k80-cu118"))
    assert good.ok, [f.render() for f in good.findings]
    assert good.wheel.cudart == ("libcudart.so.11.0",)
    bad = verify_wheel(wheel, None, [CC("3.0")])
    assert [f.message for f in bad.errors] == [
        "no kernel image for compute capability 3.0: the wheel has SASS for 3.5, 3.7, 5.0 and no PTX ≤ 3.0"
    ]


def test_ptx_only_library(tmp_path: Path, lib118_ptx: Path) -> None:
    wheel = wheel_of(tmp_path, "2.0.0+cu118", {"libtorch_cuda.so": lib118_ptx})
    report = verify_wheel(wheel, None, [CC("5.2"), CC("6.1"), CC("3.7")])
    assert [r["via"] for r in report.coverage_rows()] == [
        "no kernel image",
        "PTX compute_50 (JIT)",
        "PTX compute_50 (JIT)",
    ]
    assert [f.message for f in report.errors] == [
        "no kernel image for compute capability 3.7: the wheel has no SASS and no PTX ≤ 3.7"
    ]


def test_mpi_recipe_needs_libmpi(tmp_path: Path, lib118: Path, libmpi_user: Path) -> None:
    version = "2.0.0+cu118.sm35.sm37.mpi"
    with_mpi = wheel_of(tmp_path, version, {"libtorch_cuda.so": lib118, "libtorch_cpu.so": libmpi_user})
    report = verify_wheel(with_mpi, recipe("kepler-k80-cu118-mpi"))  # probes this host's Open MPI 4.1
    assert report.ok, [f.render() for f in report.findings]
    assert report.host_mpi is not None and report.host_mpi.implementation == "openmpi"
    (tmp_path / "no-mpi").mkdir()
    without = wheel_of(tmp_path / "no-mpi", version, {"libtorch_cuda.so": lib118})
    bad = verify_wheel(without, recipe("kepler-k80-cu118-mpi"))
    assert [f.rule for f in bad.errors] == ["mpi-not-linked"]
    assert "Not compiling with MPI. Suppress this warning with -DUSE_MPI=OFF" in bad.errors[0].message


def test_cli_cross_checks_with_the_recipes_cuda(
    tmp_path: Path, lib118: Path, lib13: Path, cuda118_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = wheel_of(tmp_path, "2.0.0+cu118.sm35.sm37", {"libtorch_cuda.so": lib118, "libextra.so": lib13})
    code = main(["verify", str(wheel), "--recipe", "kepler-k80-cu118", "--cuda-home", str(cuda118_home)])
    out, err = capsys.readouterr()
    assert code == 6, out + err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("torch/lib/")}
    assert rows["torch/lib/libtorch_cuda.so"] == ["3.5", "3.7", "5.0", "5.0", "match"]
    assert rows["torch/lib/libextra.so"] == ["7.5", "8.0", "8.0", "unsupported"]
    assert "info: torch/lib/libextra.so: cuobjdump cross-check unsupported: Support for 'sm_" in " ".join(out.split())
    # libextra links libcudart.so.13: the one error is the CUDA runtime mismatch
    assert err.splitlines()[0] == (
        f'error: {wheel.name}: torch/lib/libextra.so links libcudart.so.13 (CUDA 13.x), but toolchain.cuda = "11.8"'
    )


def test_cli_cross_checks_with_the_cuda_srcbuild_provisioned(
    tmp_path: Path, lib118: Path, cuda118_home: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # no --cuda-home, no CUDA_HOME, no cuobjdump on PATH: the recipe's CUDA as srcbuild provisioned it
    from srcbuild.toolchain.store import ToolchainStore

    entry = ToolchainStore(cuda118_home.parent).find("cuda", "11.8")
    if entry is None or entry.prefix != cuda118_home:
        pytest.skip(f"{cuda118_home} is not a CUDA srcbuild provisioned into a toolchain store")
    monkeypatch.setenv("SRCBUILD_TOOLCHAIN_DIR", str(cuda118_home.parent))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    wheel = wheel_of(tmp_path, "2.0.0+cu118.sm35.sm37", {"libtorch_cuda.so": lib118})
    code = main(["verify", str(wheel), "--recipe", "kepler-k80-cu118"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("torch/lib/")}
    assert rows["torch/lib/libtorch_cuda.so"] == ["3.5", "3.7", "5.0", "5.0", "match"]
    assert "cross-check skipped" not in out


def test_official_cpu_wheel(tmp_path: Path, torch_cpu_wheel: Path) -> None:
    py = torch_cpu_wheel.name.split("-")[2]  # cp311
    recipe_file = tmp_path / "cpu.toml"
    recipe_file.write_text(
        f'name = "cpu"\ndescription = "CPU"\n[torch]\ntag = "v2.13.0"\n'
        f'[toolchain]\npython = "{py[2]}.{py[3:]}"\ngcc = "12"\ncuda = "none"\n'
    )
    cpu = verify_wheel(torch_cpu_wheel, RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file)))
    assert cpu.ok, [f.render() for f in cpu.findings]
    assert cpu.kernels.empty and len(cpu.wheel.libraries) > 5
    assert cpu.wheel.cuda_version_py == ""  # torch/version.py: cuda = None
    kepler = verify_wheel(torch_cpu_wheel, recipe("kepler-cu92"))
    assert [f.rule for f in kepler.errors] == [
        "no-cuda",  # said once for the wheel, not once per compute capability
        "wheel-python-tag",
        "wheel-local-version",
        "cuda-runtime",
    ]
    assert kepler.errors[3].message == "torch/version.py says cuda = None: the wheel was built without CUDA"
