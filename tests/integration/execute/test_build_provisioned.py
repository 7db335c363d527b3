"""A fixture-world build for compute capability 3.5/3.7 with the CUDA 11.8 that srcbuild provisioned
from Debian's packages: no CUDA_HOME given, no CUDA 11.8 anywhere the host probe looks but the
toolchains directory."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from srcbuild.toolchain.store import Toolchain
from srcbuild.verify.fatbin import scan_elf
from tests.integration.execute.conftest import Srcbuild, srcbuild_env
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
    assert wheel.name == "torch-2.5.1+cu118.sm35.sm37-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read("torch/lib/libtorch_cuda.so")
    assert sorted({(e.kind, e.sm) for e in scan_elf(io.BytesIO(data))}) == [("ptx", 37), ("sass", 35), ("sass", 37)]
    log = srcbuild.build_log("world-kepler-cu118").read_text()
    assert f"CUDA_HOME={debian_cuda118.prefix}" in log or str(debian_cuda118.prefix / "bin" / "nvcc") in log
