"""The toolchains directory: atomic prefixes, manifests, reuse, removal and gc."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from srcbuild.paths import Paths
from srcbuild.toolchain.store import MANIFEST, Provisioned, Source, ToolchainStore


def _make(files: dict[str, str]):
    def create(target: Path, final: Path) -> Provisioned:
        for name, text in files.items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_text(text)
        return Provisioned((Source("https://example.invalid/a.tar.xz", "ab" * 32, 3),), {"nvcc": "11.8.89"})

    return create


def test_toolchain_dir_defaults_inside_the_work_dir_and_follows_the_variable(tmp_path: Path) -> None:
    paths = Paths.resolve(environ={"SRCBUILD_WORK_DIR": str(tmp_path / "w")})
    assert paths.toolchain_dir == tmp_path / "w" / "toolchains"
    moved = Paths.resolve(
        environ={"SRCBUILD_WORK_DIR": str(tmp_path / "w"), "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "t")}
    )
    assert moved.toolchain_dir == tmp_path / "t"


def test_ensure_makes_a_prefix_with_its_manifest_and_reuses_it(tmp_path: Path) -> None:
    store = ToolchainStore(tmp_path)
    made, reused = store.ensure("cuda", "11.8", "debian", _make({"bin/nvcc": "x"}))
    assert not reused and made.prefix == tmp_path / "cuda-11.8-debian"
    assert (made.prefix / "bin" / "nvcc").read_text() == "x"
    manifest = json.loads((made.prefix / MANIFEST).read_text())
    assert manifest["name"] == "cuda" and manifest["provider"] == "debian"
    assert manifest["sources"] == [{"url": "https://example.invalid/a.tar.xz", "sha256": "ab" * 32, "size": 3}]
    assert manifest["size"] == 1 and made.facts == {"nvcc": "11.8.89"}

    def fail(target: Path, final: Path) -> Provisioned:
        raise AssertionError("a complete prefix is never made twice")

    again, reused = store.ensure("cuda", "11.8", "debian", fail)
    assert reused and again.prefix == made.prefix
    assert store.find("cuda", "11.8") == again
    assert store.find("cuda", "11") == again
    assert store.find("cuda", "11.8", "redist") is None


def test_a_failed_provisioning_leaves_nothing(tmp_path: Path) -> None:
    store = ToolchainStore(tmp_path)

    def broken(target: Path, final: Path) -> Provisioned:
        (target / "half").write_text("x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.ensure("cuda", "9.2", "runfile", broken)
    assert not (tmp_path / "cuda-9.2-runfile").exists()
    assert list((tmp_path / ".tmp").iterdir()) == []
    assert store.entries() == []


def test_a_half_made_prefix_is_replaced_and_gc_removes_leftovers(tmp_path: Path) -> None:
    store = ToolchainStore(tmp_path)
    (tmp_path / "cuda-9.2-runfile" / "bin").mkdir(parents=True)  # no manifest: a crash mid-rename
    (tmp_path / ".tmp" / "gcc-7-conda.99999").mkdir(parents=True)
    (tmp_path / ".downloads").mkdir()
    (tmp_path / ".downloads" / "x.run.part").write_bytes(b"12345")
    report = store.gc()
    assert {p.name for p in report.removed} == {"cuda-9.2-runfile", "gcc-7-conda.99999", "x.run.part"}
    assert report.freed == 5
    made, _ = store.ensure("cuda", "9.2", "runfile", _make({"bin/nvcc": "y"}))
    assert (made.prefix / "bin" / "nvcc").read_text() == "y"
    (tmp_path / ".downloads" / ("ab" * 32 + "-a.tar.xz")).write_bytes(b"123")  # made into the prefix above
    (tmp_path / ".downloads" / ("cd" * 32 + "-b.run")).write_bytes(b"1")  # not used by any prefix: kept
    assert [p.name for p in store.gc().removed] == ["ab" * 32 + "-a.tar.xz"]
    assert (tmp_path / ".downloads" / ("cd" * 32 + "-b.run")).exists()


def test_remove_deletes_every_provider_of_a_version(tmp_path: Path) -> None:
    store = ToolchainStore(tmp_path)
    store.ensure("cuda", "11.8", "debian", _make({"a": "1"}))
    store.ensure("cuda", "11.8", "redist", _make({"a": "1"}))
    store.ensure("gcc", "7", "conda", _make({"a": "1"}))
    removed = store.remove("cuda", "11.8")
    assert sorted(p.name for p in removed) == ["cuda-11.8-debian", "cuda-11.8-redist"]
    assert [t.key for t in store.entries()] == ["gcc-7-conda"]
    assert os.listdir(tmp_path / ".locks")  # locks stay; they are tiny and shared
