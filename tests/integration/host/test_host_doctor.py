"""doctor and recommend on this machine: real probes, the report's keys and verdicts."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from srcbuild.advice.doctor import AFTER_INSTALL, READY, diagnose
from srcbuild.cli import main
from srcbuild.host import probe_host
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog

pytestmark = pytest.mark.integration

DOCTOR_KEYS = {
    "gpus", "driver", "cuda_toolkits", "cudnn", "nccl", "gccs", "mpi", "conda", "docker", "resources", "missing",
    "driver_cuda", "driver_reach", "driver_notes", "max_jobs", "recipes", "installs", "toolchains",
    "knowledge_checked", "knowledge_newest_torch", "knowledge_newest_seen", "knowledge_stale", "advice",
}  # fmt: skip


def test_doctor_json_keys(capsys: pytest.CaptureFixture[str], gcc11: Path, mpicc: Path) -> None:
    assert main(["doctor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == DOCTOR_KEYS
    assert set(data["resources"]) == {"cores", "memory_bytes", "memory_available_bytes", "work_dir", "disk_free_bytes"}
    assert set(data["max_jobs"]) == {"jobs", "reason"}
    gcc = next(g for g in data["gccs"] if g["major"] == 11)
    assert set(gcc) == {"major", "version", "path", "gxx", "hosts_cuda"}
    assert gcc["path"] == shutil.which("gcc-11")
    assert gcc["hosts_cuda"].startswith("11.4 to ")  # CUDA 11.4 is the first to accept gcc 11
    assert {r["recipe"] for r in data["recipes"]} == set(RecipeCatalog(Paths.resolve(environ=os.environ)).names())
    assert all(set(r) == {"recipe", "status", "reasons", "findings", "gpu_fit"} for r in data["recipes"])
    assert any(m["implementation"] == "openmpi" and m["mpicc"] == shutil.which("mpicc") for m in data["mpi"])
    cuda92 = next(n for n in data["toolchains"]["recipes"]["kepler-cu92"] if n["tool"] == "cuda")
    assert (cuda92["status"], cuda92["offer"]["provider"], cuda92["offer"]["version"]) == ("fetch", "runfile", "9.2")


def test_doctor_text(capsys: pytest.CaptureFixture[str]) -> None:
    paths = Paths.resolve(environ=os.environ)
    recipes = RecipeCatalog(paths).load_all()
    kb = load_knowledge()
    report = diagnose(kb, probe_host(environ=os.environ), recipes, paths)  # timed by bench/bench_startup.py
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("srcbuild doctor\n") and "\n\nGPUs:\n" in out
    assert all(len(line) <= 80 for line in out.splitlines())  # wrapped: stdout is not a terminal
    words = " ".join(out.split())
    assert f"MAX_JOBS: {report.jobs} ({report.jobs_reason})" in words
    for verdict in report.verdicts:
        assert f"  {verdict.recipe}: " in out
    assert f"Provisioned toolchains ({paths.toolchain_dir}): none" in words
    assert "\n  kepler-cu92: srcbuild will fetch: CUDA 9.2 (runfile), cuDNN 7.6 (nvidia)," in out


def test_kepler_cu92_verdict_names_what_to_install(gcc11: Path) -> None:
    paths = Paths.resolve(environ=os.environ)
    host = probe_host(environ=os.environ)
    if host.gcc(7) is not None or any(t.release == "9.2" for t in host.cuda_toolkits):
        pytest.skip("this machine has gcc 7 or CUDA 9.2")
    report = diagnose(load_knowledge(), host, [RecipeCatalog(paths).load("kepler-cu92")], paths)
    (verdict,) = report.verdicts
    assert verdict.status == AFTER_INSTALL
    assert verdict.reasons[:2] == ("needs CUDA 9.2", "needs gcc 7")
    assert [what for what, _ in report.installs][:2] == ["CUDA 9.2", "gcc 7"]


def test_a_recipe_this_machine_can_build_now(cuda118_home: Path, gcc11: Path, tmp_path: Path) -> None:
    """CUDA 11.8 through CUDA_HOME, gcc 11 and cuDNN 8.5 headers: kepler-k80-cu118 is ready."""
    include = tmp_path / "cudnn" / "include"
    include.mkdir(parents=True)
    (include / "cudnn_version.h").write_text(
        "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n"
    )
    env = dict(os.environ, CUDA_HOME=str(cuda118_home), CUDNN_INCLUDE_DIR=str(include))
    paths = Paths.resolve(environ=os.environ)
    host = probe_host(environ=env)
    report = diagnose(load_knowledge(), host, [RecipeCatalog(paths).load("kepler-k80-cu118")], paths)
    assert report.verdicts[0].status == READY, report.verdicts[0].reasons


def test_recommend_for_this_machine_never_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("srcbuild recommend: this machine\n")
    if not probe_host(environ=os.environ).gpus:
        assert "no NVIDIA GPU found; describe one with --gpu, --pci-id or --paste FILE\n" in out
