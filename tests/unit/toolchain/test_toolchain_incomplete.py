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
