"""The Debian route for real: CUDA 11.8 from Debian's non-free packages through a private apt
configuration (the mirror this machine is configured with), then used to build for 3.5/3.7."""

from __future__ import annotations

import os
from pathlib import Path

from srcbuild import proc
from srcbuild.host.facts import HostFacts
from srcbuild.host.toolchain import missing_components
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.toolchain.needs import needs_for
from srcbuild.toolchain.providers.apt import configured_mirror
from srcbuild.toolchain.session import open_session
from srcbuild.toolchain.store import Toolchain
from srcbuild.verify.fatbin import scan_elf

KERNEL = "__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"


def test_cuda_from_debian_packages_builds_for_kepler(debian_cuda118: Toolchain, tmp_path: Path, gcc11: Path) -> None:
    home = debian_cuda118.prefix
    assert debian_cuda118.facts["nvcc"] == "11.8.89" and debian_cuda118.facts["mirror"] == configured_mirror()
    assert {s.url.split("_")[0] for s in debian_cuda118.sources} >= {"apt:nvidia-cuda-toolkit", "apt:libnvvm4"}
    assert all(len(s.sha256) == 64 for s in debian_cuda118.sources)
    # NVIDIA's component wheels complete it: every header and library a torch build needs
    assert missing_components(home, "11.8.89") == ()
    cublas = "pip:nvidia_cublas_cu11-11.11.3.6-py3-none-manylinux2014_x86_64.whl"
    assert cublas in {s.url for s in debian_cuda118.sources}
    assert (home / "lib64" / "libcusparse.so").resolve() == home / "lib" / "libcusparse.so.11"

    (tmp_path / "k.cu").write_text(KERNEL)
    argv = [str(home / "bin" / "nvcc"), "-ccbin", str(gcc11.with_name("g++-11")), "-c", "k.cu", "-o", "k.o"]
    argv += ["-gencode", "arch=compute_35,code=sm_35", "-gencode", "arch=compute_37,code=sm_37"]
    result = proc.run(argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})  # no CUDA_HOME anywhere
    assert result.ok, result.tail
    assert {e.sm for e in scan_elf(tmp_path / "k.o") if e.kind == "sass"} == {35, 37}
    assert (home / "bin" / "cuobjdump").is_file()

    paths = Paths.resolve(environ={"SRCBUILD_TOOLCHAIN_DIR": str(home.parent)})
    recipe = RecipeCatalog(paths).load("kepler-k80-cu118")
    session = open_session(paths, environ=os.environ)
    [cuda] = [n for n in needs_for(recipe, HostFacts(), session.store, session.facts) if n.request.tool == "cuda"]
    assert (cuda.status, cuda.where) == ("provisioned", home)
