"""The cache key of a resolved build: one computation, and no host fact but the platform enters it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve import BuildHost, BuildOptions, resolve
from srcbuild.resolve.key import build_fingerprint, key_inputs
from srcbuild.resolve.resolver import resolve_unprobed

PLATFORM = "linux_x86_64-glibc2.36"


def test_a_probed_build_and_an_unprobed_lookup_share_the_key(tmp_path: Path) -> None:
    paths = Paths.resolve(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache", environ={})
    recipe = RecipeCatalog(paths).load("kepler-cu92")
    probed = BuildHost(
        gcc=Path("/usr/bin/gcc-7"),
        gxx=Path("/usr/bin/g++-7"),
        cuda_home=Path("/usr/local/cuda-9.2"),
        cudnn_root=Path("/opt/cudnn"),
        ccache=Path("/usr/bin/ccache"),
        max_jobs=12,
        conda_tools=(("micromamba", "/usr/bin/micromamba"),),
        platform=PLATFORM,
    )
    for package in ("torch", "torchvision"):
        options = BuildOptions(package=package, max_jobs=3, mirrors=("gitee",))
        built = resolve(recipe, options, probed, load_knowledge(), paths=paths, environ={"MAX_JOBS": "5"})
        looked_up = resolve_unprobed(recipe, package, PLATFORM)
        assert key_inputs(built) == key_inputs(looked_up)
        assert build_fingerprint(built) == build_fingerprint(looked_up)
    other = resolve_unprobed(recipe, "torch", "linux_aarch64-glibc2.36")
    assert build_fingerprint(other) != build_fingerprint(resolve_unprobed(recipe, "torch", PLATFORM))
    patched = dataclasses.replace(recipe, build=dataclasses.replace(recipe.build, env=(("USE_NCCL", "1"),)))
    assert build_fingerprint(resolve_unprobed(patched, "torch", PLATFORM)) != build_fingerprint(
        resolve_unprobed(recipe, "torch", PLATFORM)
    )
