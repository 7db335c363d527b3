"""A few files out of a .deb: only those asked for are written, a missing one is named."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from srcbuild.toolchain.data_files import load_facts
from srcbuild.toolchain.debfile import NotADeb, extract_members


def _ar_member(name: str, data: bytes) -> bytes:
    header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
    return header + data + (b"\n" if len(data) % 2 else b"")


def make_deb(path: Path, files: dict[str, bytes], compression: str = "xz") -> Path:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode=f"w:{compression}") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        link = tarfile.TarInfo("./usr/lib/x86_64-linux-gnu/liblink.so")
        link.type, link.linkname = tarfile.SYMTYPE, "libcudadevrt.a"
        tar.addfile(link)
    control = io.BytesIO()
    with tarfile.open(fileobj=control, mode="w:xz"):
        pass
    path.write_bytes(
        b"!<arch>\n"
        + _ar_member("debian-binary", b"2.0\n")
        + _ar_member("control.tar.xz", control.getvalue())
        + _ar_member(f"data.tar.{compression}", data.getvalue())
    )
    return path


LIB = "usr/lib/x86_64-linux-gnu"


@pytest.mark.parametrize("compression", ["xz", "gz"])
def test_only_the_members_asked_for_are_written(tmp_path: Path, compression: str) -> None:
    deb = make_deb(
        tmp_path / "nvidia-cuda-dev_11.8_amd64.deb",
        {
            f"{LIB}/libcudadevrt.a": b"devrt",
            f"{LIB}/stubs/libcuda.so": b"stub",
            f"{LIB}/libcublas_static.a": b"x" * 999,
        },
        compression,
    )
    missing = extract_members(deb, [f"{LIB}/libcudadevrt.a", f"{LIB}/stubs/libcuda.so"], tmp_path / "root")
    assert missing == ()
    written = sorted(str(p.relative_to(tmp_path / "root")) for p in (tmp_path / "root").rglob("*") if p.is_file())
    assert written == [f"{LIB}/libcudadevrt.a", f"{LIB}/stubs/libcuda.so"]
    assert (tmp_path / "root" / LIB / "stubs" / "libcuda.so").read_bytes() == b"stub"


def test_a_member_the_package_lacks_or_that_is_a_link_is_named(tmp_path: Path) -> None:
    deb = make_deb(tmp_path / "p.deb", {f"{LIB}/libcudadevrt.a": b"devrt"})
    missing = extract_members(deb, [f"{LIB}/libcudart_static.a", f"{LIB}/liblink.so"], tmp_path / "root")
    assert missing == (f"{LIB}/libcudart_static.a", f"{LIB}/liblink.so")
    assert not (tmp_path / "root" / LIB / "liblink.so").exists()


def test_a_file_that_is_not_a_deb_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.deb").write_bytes(b"<html>404</html>")
    with pytest.raises(NotADeb, match="not an ar archive"):
        extract_members(tmp_path / "x.deb", ["a"], tmp_path / "root")
    (tmp_path / "y.deb").write_bytes(b"!<arch>\n" + _ar_member("debian-binary", b"2.0\n"))
    with pytest.raises(NotADeb, match=r"no data\.tar member"):
        extract_members(tmp_path / "y.deb", ["a"], tmp_path / "root")


def test_the_debian_route_takes_the_static_runtime_and_the_stub_from_nvidia_cuda_dev() -> None:
    route = load_facts({}).debian_for("11.8")
    assert route is not None
    assert route.extract_package == "nvidia-cuda-dev"
    assert route.all_packages[-1] == "nvidia-cuda-dev" and "nvidia-cuda-dev" not in route.packages
    assert {Path(f).relative_to(LIB).as_posix() for f in route.extract_files} == {
        "libcudadevrt.a", "libcudart_static.a", "stubs/libcuda.so"
    }
