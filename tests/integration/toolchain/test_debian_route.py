"""The Debian route for real: CUDA 11.8 from Debian's non-free packages through a private apt
configuration (the mirror this machine is configured with), then used to build for 3.5/3.7."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from srcbuild import proc
from srcbuild.cli import main
from srcbuild.host.facts import HostFacts
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.toolchain.needs import needs_for
from srcbuild.toolchain.providers.apt import configured_mirror
from srcbuild.toolchain.session import open_session
from srcbuild.verify.fatbin import scan_elf
from tests.conftest import require_tool

KERNEL = "__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"


def test_cuda_from_debian_packages_builds_for_kepler(
    tmp_path: Path, gcc11: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_tool("apt-get and dpkg-deb", shutil.which("apt-get") and shutil.which("dpkg-deb"))
    require_tool("a Debian mirror in /etc/apt", configured_mirror())
    apt_state = sorted(p.name for p in Path("/etc/apt").rglob("*"))
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "debian", "--json"]) == 0
    [made] = json.loads(capsys.readouterr().out)
    home = Path(made["prefix"])
    assert home == Paths.resolve().toolchain_dir / "cuda-11.8-debian"
    assert made["facts"]["nvcc"] == "11.8.89" and made["facts"]["mirror"] == configured_mirror()
    assert {s["url"].split("_")[0] for s in made["sources"]} >= {"apt:nvidia-cuda-toolkit", "apt:libnvvm4"}
    assert sorted(p.name for p in Path("/etc/apt").rglob("*")) == apt_state  # the system's apt is untouched

    (tmp_path / "k.cu").write_text(KERNEL)
    argv = [str(home / "bin" / "nvcc"), "-ccbin", str(gcc11.with_name("g++-11")), "-c", "k.cu", "-o", "k.o"]
    argv += ["-gencode", "arch=compute_35,code=sm_35", "-gencode", "arch=compute_37,code=sm_37"]
    result = proc.run(argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})  # no CUDA_HOME anywhere
    assert result.ok, result.tail
    assert {e.sm for e in scan_elf(tmp_path / "k.o") if e.kind == "sass"} == {35, 37}
    assert (home / "bin" / "cuobjdump").is_file()

    recipe = RecipeCatalog(Paths.resolve()).load("kepler-k80-cu118")
    session = open_session(Paths.resolve())
    [cuda] = [n for n in needs_for(recipe, HostFacts(), session.store, session.facts) if n.request.tool == "cuda"]
    assert (cuda.status, cuda.where) == ("provisioned", home)
