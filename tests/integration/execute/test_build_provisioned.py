"""A fixture-world build for compute capability 3.5/3.7 with the CUDA 11.8 that srcbuild provisioned
from Debian's packages: no CUDA_HOME given, no CUDA 11.8 anywhere the host probe looks but the
toolchains directory."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

from srcbuild.toolchain.providers.apt import configured_mirror
from srcbuild.toolchain.store import Toolchain
from srcbuild.verify.fatbin import scan_elf
from tests.conftest import require_tool
from tests.integration.execute.conftest import CP, Srcbuild, srcbuild_env, world_recipes
from tests.worlds.conda_channel import channel_url, make_channel
from tests.worlds.conda_cuda import cuda_channel_packages, magma_package
from tests.worlds.gitworld import World


def test_kepler_build_finds_the_provisioned_cuda(
    world: World, build_venv: Path, debian_cuda118: Toolchain, gcc11: Path
) -> None:
    env = srcbuild_env(None)  # no CUDA_* variable at all
    env["SRCBUILD_TOOLCHAIN_DIR"] = str(debian_cuda118.prefix.parent)
    srcbuild = Srcbuild(env, world, build_venv)
    ran = srcbuild.run("torch", "world-kepler-cu118")
    assert ran.rc == 0, ran.out
    wheel = Path(ran.last_line)
    assert wheel.name == f"torch-2.5.1+cu118.sm35.sm37-{CP}-{CP}-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read("torch/lib/libtorch_cuda.so")
    assert sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))}) == [("ptx", 37), ("sass", 35), ("sass", 37)]
    logs = (srcbuild.configure_log("world-kepler-cu118"), srcbuild.build_log("world-kepler-cu118"))
    log = "".join(p.read_text() for p in logs)
    assert f"CUDA_HOME={debian_cuda118.prefix}" in log or str(debian_cuda118.prefix / "bin" / "nvcc") in log


def test_the_build_provisions_what_the_host_lacks_before_the_compiler_step(
    world: World, build_venv: Path, gcc11: Path, tmp_path: Path
) -> None:
    require_tool("apt-get and dpkg-deb", shutil.which("apt-get") and shutil.which("dpkg-deb"))
    require_tool("a Debian mirror in /etc/apt", configured_mirror())
    env = srcbuild_env(None)  # no CUDA_* variable; an empty toolchains directory
    env["SRCBUILD_TOOLCHAIN_DIR"] = str(tmp_path / "toolchains")
    env["SRCBUILD_TOOLCHAIN_PROVIDERS"] = "debian"
    srcbuild = Srcbuild(env, world, build_venv)

    refused = srcbuild.run("torch", "world-kepler-cu118", "--no-provision")
    assert refused.rc == 4 and "CUDA 11.8 (toolchain.cuda) is not installed" in refused.out
    assert "srcbuild toolchain install --recipe" in refused.out
    assert not (tmp_path / "toolchains").exists()

    plan = srcbuild.run("plan", "world-kepler-cu118", "torch", "--format", "json")
    assert plan.rc == 0, plan.out
    steps = json.loads(plan.out)["steps"]
    assert [s["id"] for s in steps][:3] == ["preflight", "provision", "compiler"]
    assert steps[1]["action"]["args"] == {"cuda": str(tmp_path / "toolchains" / "cuda-11.8-debian")}

    ran = srcbuild.run("torch", "world-kepler-cu118")
    assert ran.rc == 0, ran.out
    assert f"cuda 11.8 (debian) provisioned: {tmp_path / 'toolchains' / 'cuda-11.8-debian'}" in ran.out
    wheel = Path(ran.last_line)
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read("torch/lib/libtorch_cuda.so")
    assert sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))}) == [("ptx", 37), ("sass", 35), ("sass", 37)]
    manifest = json.loads(next(srcbuild.cache_dir.rglob("manifest.json")).read_text())
    assert manifest["toolchain"]["provisioned.cuda"] == str(tmp_path / "toolchains" / "cuda-11.8-debian")


def test_resume_reuses_what_the_failed_run_provisioned(
    world: World, build_venv: Path, cuda118_home: Path, gcc11: Path, tmp_path: Path
) -> None:
    """CUDA 11.8 from a local nvidia channel (packages made of the real CUDA 11.8 files) and MAGMA
    from a local pytorch channel are provisioned by a run whose build then fails; the channels are
    then removed, and ``--resume`` builds with the same prefixes, fetching nothing."""
    nvidia = make_channel(tmp_path / "nvidia", cuda_channel_packages(cuda118_home))
    pytorch = make_channel(tmp_path / "pytorch", [magma_package("11.8", tmp_path / "magma-src", str(gcc11))])
    text = (world_recipes() / "world-kepler-cu118.toml").read_text()
    recipe = text.replace('name = "world-kepler-cu118"', 'name = "world-kepler-magma"')
    (world_recipes() / "world-kepler-magma.toml").write_text(recipe.replace(', USE_MAGMA = "0"', ""))
    data = tmp_path / "toolchain-data"  # the test channel's MAGMA has kernels for the world's 3.5 and 3.7
    data.mkdir()
    (data / "conda.toml").write_text(
        '[magma]\nchannel = "pytorch"\npackages = ["magma-cuda{nodot}"]\nversions = ["11.8"]\n'
        'archs = ["3.5", "3.7"]\nsource = "test channel"\n'
    )
    toolchains = tmp_path / "toolchains"
    cuda, magma = toolchains / "cuda-11.8-conda", toolchains / "magma-cuda11.8-conda"
    env = srcbuild_env(None)  # no CUDA_* variable: CUDA 11.8 is only what srcbuild provisions
    env.update(
        SRCBUILD_TOOLCHAIN_DIR=str(toolchains),
        SRCBUILD_TOOLCHAIN_PROVIDERS="conda",
        SRCBUILD_TOOLCHAIN_DATA=str(data),
        SRCBUILD_CHANNEL_MIRRORS=f"nvidia={channel_url(nvidia)} pytorch={channel_url(pytorch)}",
    )
    srcbuild = Srcbuild(env, world, build_venv)
    knob = {"FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once")}
    failed = srcbuild.run("torch", "world-kepler-magma", env=knob)
    assert failed.rc == 5, failed.out
    assert f"cuda 11.8 (conda) provisioned: {cuda}" in failed.out
    assert f"magma cuda11.8 (conda) provisioned: {magma}" in failed.out
    made = {p: (p / ".srcbuild-toolchain.json").stat().st_mtime_ns for p in (cuda, magma)}
    shutil.rmtree(nvidia)  # nothing left to fetch from: a second provisioning would fail
    shutil.rmtree(pytorch)

    resumed = srcbuild.run("torch", "world-kepler-magma", "--resume", env=knob)
    assert resumed.rc == 0, resumed.out
    assert "provisioned:" not in resumed.out and "[provision]" not in resumed.out
    assert {p: (p / ".srcbuild-toolchain.json").stat().st_mtime_ns for p in (cuda, magma)} == made
    logs = srcbuild.work_dir / "builds" / "world-kepler-magma-torch" / "logs"
    first, again = sorted(logs.glob("*-build.log"), key=lambda p: p.stat().st_mtime_ns)
    canary = srcbuild.configure_log("world-kepler-magma").read_text()  # the canary configures first
    assert f"-DCUDA_HOME={cuda} " in canary and "Building CUDA kernels" in canary + first.read_text()
    assert "Building CUDA kernels" not in again.read_text()  # resumed: only what was left
    shell = srcbuild.run("plan", "world-kepler-magma", "torch", "--format", "shell")
    assert shell.rc == 0 and f"MAGMA_HOME={magma}" in shell.out, shell.out  # what the build ran with
    manifest = json.loads(next(srcbuild.cache_dir.rglob("manifest.json")).read_text())
    assert manifest["toolchain"]["provisioned.cuda"] == str(cuda)
    assert manifest["toolchain"]["provisioned.magma"] == str(magma)
    wheel = Path(resumed.last_line)
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read("torch/lib/libtorch_cuda.so")
    assert sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))}) == [("ptx", 37), ("sass", 35), ("sass", 37)]
