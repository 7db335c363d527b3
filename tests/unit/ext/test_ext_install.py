"""Which cached extension ``srcbuild install NAME --recipe R`` picks: this extension, this recipe,
the torch the target environment has, its Python ABI, kernels for the recipe's archs."""

from __future__ import annotations

import time
from pathlib import Path

from srcbuild.cache.key import ResolvedFacts
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import WheelCache
from srcbuild.ext.install import candidates
from srcbuild.ext.key import ExtKeyInputs, ext_fingerprint
from srcbuild.files import sha256_file
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from tests.unit.cache.synthetic import make_wheel

RECIPE = 'name = "k80"\n[torch]\ntag = "v2.0.1"\n[toolchain]\npython = "3.11"\ngcc = "11"\ncuda = "11.8"\n' \
    '[gpu]\narch = ["3.5", "3.7"]\n'


def _store(cache: WheelCache, tmp: Path, recipe: Recipe, torch: str, sass: tuple[int, ...], abi: str = "cp311",
           name: str = "torch_scatter", created: float = 0.0) -> Path:
    wheel = make_wheel(tmp / f"w-{torch}-{abi}-{len(sass)}-{created}", name, "2.1.2", f"{abi}-{abi}-linux_x86_64")
    inputs = ExtKeyInputs.create(
        name=name.replace("_", "-"), source={"sdist": "torch_scatter-2.1.2.tar.gz", "sha256": "aa"},
        against="sha256:" + torch, torch=torch, torch_cuda="11.7", build_env={}, options=(), python_abi=abi,
        gcc="11", cuda="11.8", platform="linux_x86_64",
    )
    manifest = Manifest(
        package=name.replace("_", "-"), version="2.1.2", wheel=wheel.name, sha256=sha256_file(wheel),
        fingerprint=ext_fingerprint(inputs), key_inputs=inputs.to_json(),
        resolved=ResolvedFacts.create(gcc_version=f"11.{int(created)}", arch=("3.5", "3.7")).to_json(),
        recipe=recipe.to_json(),
        toolchain={"gcc": "11", "cuda": "11.8"}, sass=sass, ptx=(), size=wheel.stat().st_size,
        created=created or time.time(),
    )
    return cache.store(wheel, manifest).wheel_path


def test_the_entry_for_the_environments_torch_and_python_is_chosen(tmp_path: Path) -> None:
    (tmp_path / "k80.toml").write_text(RECIPE)
    recipe = RecipeCatalog(Paths.resolve(work_dir=tmp_path, cache_dir=tmp_path / "c", environ={})).load(
        str(tmp_path / "k80.toml")
    )
    cache = WheelCache(tmp_path / "cache")
    older = _store(cache, tmp_path, recipe, "2.0.1", (35, 37), created=1.0)
    newer = _store(cache, tmp_path, recipe, "2.0.1", (35, 37, 50), created=2.0)
    _store(cache, tmp_path, recipe, "2.7.1+cu118", (35, 37))  # another torch
    _store(cache, tmp_path, recipe, "2.0.1", (37,))  # misses 3.5
    _store(cache, tmp_path, recipe, "2.0.1", (35, 37), abi="cp310")  # another Python
    _store(cache, tmp_path, recipe, "2.0.1", (35, 37), name="torch_sparse")  # another extension
    found = candidates(cache, "torch-scatter", recipe, "2.0.1", "cp311")
    assert [e.wheel_path for e in found] == [newer, older]
    assert candidates(cache, "torch-scatter", recipe, "2.0.2", "cp311") == []
