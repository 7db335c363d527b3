"""Whether a wheel fits a machine: Python tag, architecture, glibc, driver CUDA level."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from srcbuild.cache.fit import Target, check_fit
from srcbuild.capability import ComputeCapability
from srcbuild.findings import Severity
from tests.unit.cache.synthetic import make_manifest, make_wheel

PY = Path("/envs/k/bin/python")


def target(version: str = "3.8", machine: str = "x86_64", glibc=(2, 36), driver=None) -> Target:
    return Target(PY, "cpython", version, machine, glibc, driver)


def manifest_for(tmp_path: Path, tag: str = "cp38-cp38-linux_x86_64", **kwargs):
    wheel = make_wheel(tmp_path, version="1.7.1+cu92.sm30", tag=tag)
    return make_manifest(wheel, **kwargs)


def test_a_matching_machine_fits(tmp_path: Path) -> None:
    assert check_fit(manifest_for(tmp_path), target(driver=(11, 4))) == []


def test_python_mismatch(tmp_path: Path) -> None:
    (finding,) = check_fit(manifest_for(tmp_path), target(version="3.10", driver=(11, 4)))
    assert finding.rule == "wheel-python" and finding.severity is Severity.ERROR
    assert finding.message == (
        "torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl is for cp38; the target /envs/k/bin/python is cpython 3.10"
    )
    assert (
        finding.fix
        == "install into an environment of Python 3.8 (--into PREFIX or --python), or use a recipe for this Python"
    )


def test_pure_python_and_abi3_tags_fit(tmp_path: Path) -> None:
    assert check_fit(manifest_for(tmp_path / "a", tag="py3-none-any"), target("3.12", driver=(12, 0))) == []
    assert check_fit(manifest_for(tmp_path / "b", tag="cp38-abi3-linux_x86_64"), target("3.8", driver=(12, 0))) == []


def test_architecture_mismatch(tmp_path: Path) -> None:
    findings = check_fit(manifest_for(tmp_path), target(machine="aarch64", driver=(11, 4)))
    assert [f.message for f in findings] == [
        "torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl is for linux_x86_64; this machine is aarch64"
    ]


def test_older_glibc_is_refused(tmp_path: Path) -> None:
    manifest = dataclasses.replace(manifest_for(tmp_path), glibc_needed="2.36")
    (finding,) = check_fit(manifest, target(glibc=(2, 31), driver=(11, 4)))
    assert finding.rule == "wheel-glibc"
    assert finding.message == (
        "torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl needs glibc 2.36; this machine has glibc 2.31"
    )
    assert check_fit(manifest, target(glibc=(2, 39), driver=(11, 4))) == []


def test_a_schema_1_entry_needs_the_glibc_its_platform_named(tmp_path: Path) -> None:
    manifest = manifest_for(tmp_path, platform="linux_x86_64-glibc2.36")
    (finding,) = check_fit(manifest, target(glibc=(2, 31), driver=(11, 4)))
    assert "needs glibc 2.36; this machine has glibc 2.31" in finding.message


def test_manylinux_tag_needs_its_glibc(tmp_path: Path) -> None:
    manifest = manifest_for(tmp_path, tag="cp38-cp38-manylinux_2_28_x86_64", platform="linux_x86_64")
    (finding,) = check_fit(manifest, target(glibc=(2, 17), driver=(11, 4)))
    assert "needs glibc 2.28; this machine has glibc 2.17" in finding.message


def test_driver_too_old(tmp_path: Path) -> None:
    (finding,) = check_fit(manifest_for(tmp_path), target(driver=(9, 0)))
    assert finding.severity is Severity.ERROR
    assert finding.message == "the wheel needs a driver for CUDA 9.2; this driver supports CUDA 9.0 at most"
    assert finding.fix == "install a newer driver, or use a recipe with CUDA 9.0 or older"


def test_minor_version_compatibility_is_a_warning(tmp_path: Path) -> None:
    manifest = manifest_for(tmp_path)
    manifest = dataclasses.replace(manifest, key_inputs={**manifest.key_inputs, "cuda": "11.8"})
    (finding,) = check_fit(manifest, target(driver=(11, 4)))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("the driver supports CUDA 11.4, the wheel is built with CUDA 11.8: it runs")


def test_no_driver_is_only_a_note(tmp_path: Path) -> None:
    (finding,) = check_fit(manifest_for(tmp_path), target(driver=None))
    assert finding.severity is Severity.INFO
    assert finding.message == "no NVIDIA driver answered (nvidia-smi); not checked that it runs CUDA 9.2"


def test_the_machines_gpu_must_be_covered(tmp_path: Path) -> None:
    manifest = manifest_for(tmp_path, sass=(35, 37), ptx=())
    ok = dataclasses.replace(target(driver=(11, 4)), gpus=(ComputeCapability(3, 7),))
    assert check_fit(manifest, ok) == []
    laptop = dataclasses.replace(target(driver=(11, 4)), gpus=(ComputeCapability(3, 0),))
    (finding,) = check_fit(manifest, laptop)
    assert finding.rule == "wheel-gpu"
    assert finding.message == (
        "no kernel in torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl runs on this machine's GPU "
        "(compute capability 3.0): it has SASS for 3.5 and 3.7 and PTX for none"
    )
    assert finding.fix == "use a recipe whose gpu.arch includes 3.0"


def test_driver_and_gpus_from_recorded_nvidia_smi(monkeypatch) -> None:
    from srcbuild.cache import fit
    from tests.conftest import FIXTURES

    table = (FIXTURES / "machines" / "k80-server" / "nvidia-smi.txt").read_text()
    answers = {("nvidia-smi",): table, ("nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"): "3.7\n3.7\n"}
    monkeypatch.setattr(fit.proc, "probe", lambda argv, **kw: answers.get(tuple(argv)))
    assert fit.probe_driver_cuda() == (11, 4)
    assert fit.probe_gpus() == (ComputeCapability(3, 7), ComputeCapability(3, 7))
    monkeypatch.setattr(fit.proc, "probe", lambda argv, **kw: None)  # no driver
    assert fit.probe_driver_cuda() is None and fit.probe_gpus() == ()
