"""A provisioned CUDA home lacking part of the complete-home contract is not reused."""

from __future__ import annotations

from pathlib import Path

from srcbuild.toolchain.providers.base import Request
from srcbuild.toolchain.provision import existing, incomplete
from srcbuild.toolchain.store import Provisioned, ToolchainStore
from tests.worlds.cuda_home import make_home


def provisioned(store: ToolchainStore, skip: tuple[str, ...]) -> None:
    def create(target: Path, final: Path) -> Provisioned:
        make_home(target, "11.8", skip=skip)
        return Provisioned((), {"nvcc": "11.8.89"})

    store.ensure("cuda", "11.8", "debian", create)


def test_a_complete_home_serves_the_request(tmp_path: Path) -> None:
    store = ToolchainStore(tmp_path)
    provisioned(store, ())
    found = existing(Request("cuda", "11.8"), store)
    assert found is not None and incomplete(found) == ()


def test_an_incomplete_home_does_not(tmp_path: Path) -> None:
    store = ToolchainStore(tmp_path)
    provisioned(store, ("cccl", "cusparse"))
    [entry] = store.entries()
    assert incomplete(entry) == ("cccl", "cusparse")
    assert existing(Request("cuda", "11.8"), store) is None


def test_the_index_files_of_the_k80_recipe() -> None:
    import os

    from srcbuild.paths import Paths
    from srcbuild.recipe import RecipeCatalog
    from srcbuild.toolchain.facts import load_facts
    from srcbuild.toolchain.index_files import index_files

    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-k80-cu118")
    files = index_files(recipe, load_facts({}), nccl="2.14")
    assert [f.tool for f in files].count("cuda") == 11
    cudnn = next(f for f in files if f.tool == "cudnn")
    assert cudnn.hashed_requirement == (
        "nvidia-cudnn-cu11==8.5.0.96 --hash=sha256:402f40adfc6f418f9dae9ab402e773cfed9beae52333f6d86ae3107a1b9527e7"
    )
    assert (cudnn.size, cudnn.filename) == (557141533, "nvidia_cudnn_cu11-8.5.0.96-2-py3-none-manylinux1_x86_64.whl")
    assert files[-1].requirement == "nvidia-nccl-cu11==2.14.3"
    assert sum(f.size or 0 for f in files) == 1036063684 + 557141533 + 177099966
