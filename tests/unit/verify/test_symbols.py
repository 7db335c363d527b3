"""The manylinux tag a glibc requirement allows."""

from __future__ import annotations

from srcbuild.verify.symbols import glibc_text, glibc_versions, manylinux_tag


def test_manylinux_tag_and_text() -> None:
    assert manylinux_tag((2, 17), "x86_64") == "manylinux_2_17_x86_64"
    assert manylinux_tag(None, "aarch64") == "manylinux_2_5_aarch64"
    assert glibc_text((2, 36)) == "2.36" and glibc_text(None) == ""
    assert glibc_versions(b"not an ELF file") == set()
    assert glibc_versions(b"\x7fELF truncated") == set()
