"""The PEP 503 index: pages, #sha256 links, relabelled wheels whose metadata agrees with their name."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.simple_index import relabel_wheel, write_index
from srcbuild.cache.store import WheelCache
from tests.unit.cache.synthetic import make_manifest, make_wheel


def test_index_pages_and_relabelling(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "c")
    plain = make_wheel(tmp_path / "a", version="1.7.1")
    labelled = make_wheel(tmp_path / "b", name="torchvision", version="0.8.2+cu92.sm30")
    torch_entry = cache.store(plain, make_manifest(plain))
    cache.store(labelled, make_manifest(labelled, package="torchvision"))
    out = tmp_path / "index"
    wheels = write_index(cache, out)
    names = sorted(w.filename for w in wheels)
    assert names == [
        "torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl",
        "torchvision-0.8.2+cu92.sm30-cp38-cp38-linux_x86_64.whl",
    ]
    root_page = (out / "simple" / "index.html").read_text()
    assert '<a href="torch/">torch</a>' in root_page and '<a href="torchvision/">torchvision</a>' in root_page
    served = out / "files" / "torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl"
    sha = hashlib.sha256(served.read_bytes()).hexdigest()
    page = (out / "simple" / "torch" / "index.html").read_text()
    assert (
        f'<a href="../../files/torch-1.7.1%2Bcu92.sm30-cp38-cp38-linux_x86_64.whl#sha256={sha}" '
        f'data-srcbuild-fingerprint="{torch_entry.fingerprint}">torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl</a>'
    ) in page
    with zipfile.ZipFile(served) as zf:
        names_in = zf.namelist()
        assert "torch-1.7.1+cu92.sm30.dist-info/METADATA" in names_in
        assert not any(n.startswith("torch-1.7.1.dist-info/") for n in names_in)
        assert "Version: 1.7.1+cu92.sm30" in zf.read("torch-1.7.1+cu92.sm30.dist-info/METADATA").decode()
        record = zf.read("torch-1.7.1+cu92.sm30.dist-info/RECORD").decode()
        assert "torch/_C.so,sha256=" in record
        assert zf.read("torch/_C.so") == b"kernels go here\n"
    sidecar = Manifest.read(out / "files" / f"{served.name}.manifest.json")
    assert sidecar.sha256 == sha and sidecar.version == "1.7.1+cu92.sm30"
    assert sidecar.extra["original_sha256"] == torch_entry.manifest.sha256
    assert sidecar.entry_key == torch_entry.key
    # the labelled wheel is served unchanged
    assert (out / "files" / labelled.name).read_bytes() == labelled.read_bytes()
    # a second run reuses what is there
    mtime = served.stat().st_mtime_ns
    write_index(cache, out)
    assert served.stat().st_mtime_ns == mtime


def test_relabel_keeps_every_member(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "a", version="2.0.0")
    out = relabel_wheel(wheel, tmp_path, "2.0.0+cu118.sm35.sm37")
    assert out.name == "torch-2.0.0+cu118.sm35.sm37-cp38-cp38-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(out) as b:
        assert len(a.namelist()) == len(b.namelist())
        assert a.read("torch/__init__.py") == b.read("torch/__init__.py")


def test_a_rotten_entry_is_never_published(tmp_path: Path) -> None:
    # one byte flipped with the size and mtime kept: the index re-hashes it (its ctime changed),
    # moves it to damaged/ and writes nothing (exit 7 from the command); the next run publishes the rest
    import os

    import pytest

    from srcbuild.errors import CacheIntegrityError

    cache = WheelCache(tmp_path / "c")
    good = make_wheel(tmp_path / "a", name="torchvision", version="0.8.2+cu92.sm30")
    rotten = make_wheel(tmp_path / "b", version="1.7.1")
    cache.store(good, make_manifest(good, package="torchvision"))
    entry = cache.store(rotten, make_manifest(rotten))
    st = os.stat(entry.wheel_path)
    data = bytearray(entry.wheel_path.read_bytes())
    data[60] ^= 1
    entry.wheel_path.write_bytes(bytes(data))
    os.utime(entry.wheel_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    out = tmp_path / "index"
    with pytest.raises(CacheIntegrityError, match="not published") as info:
        write_index(cache, out)
    assert entry.key[:12] in info.value.message and "damaged" in info.value.message
    assert not (out / "simple").exists()
    assert [w.filename for w in write_index(cache, out)] == [good.name]


def test_cache_index_and_serve_exit_7_on_a_rotten_entry(tmp_path: Path, capsys) -> None:
    import os

    from srcbuild.cli import main

    cache = WheelCache(tmp_path / "c")
    wheel = make_wheel(tmp_path / "a", version="1.7.1")
    entry = cache.store(wheel, make_manifest(wheel))
    st = os.stat(entry.wheel_path)
    data = bytearray(entry.wheel_path.read_bytes())
    data[60] ^= 1
    entry.wheel_path.write_bytes(bytes(data))
    os.utime(entry.wheel_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    dirs = ["--cache-dir", str(tmp_path / "c"), "--work-dir", str(tmp_path / "w"), "--unsigned"]
    assert main(["cache", "serve", "--port", "0", "--out", str(tmp_path / "served"), *dirs]) == 7
    err = capsys.readouterr().err
    assert f"error: cache entry {entry.key[:12]}: {wheel.name} has sha256 " in err and "not published" in err
    assert not (tmp_path / "served" / "simple").exists()
    assert main(["cache", "index", "--out", str(tmp_path / "index"), *dirs]) == 0  # moved aside: none left
