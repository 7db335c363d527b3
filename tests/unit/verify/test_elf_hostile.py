"""The ELF reader on impossible headers: exit 6 naming the wheel and the member, never exit 70.

The header fields a reader trusts (``e_phoff``/``e_phentsize``/``e_phnum``, ``e_shoff``/
``e_shentsize``/``e_shnum``, ``e_shstrndx``) are set by hand and by hypothesis; whatever they
hold, reading the file either succeeds or is a ``VerificationFailed``.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srcbuild.cli import main
from srcbuild.errors import VerificationFailed
from srcbuild.verify.elfread import read_elf
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel

TAG = "cp38-cp38-linux_x86_64"
# offsets of the 64-bit header fields (ELF-64 Object File Format, "ELF Header")
FIELDS = {"e_phoff": (32, "<Q"), "e_shoff": (40, "<Q"), "e_phentsize": (54, "<H"), "e_phnum": (56, "<H"),
          "e_shentsize": (58, "<H"), "e_shnum": (60, "<H"), "e_shstrndx": (62, "<H")}  # fmt: skip


def _elf(tmp_path: Path) -> bytes:
    lib = tmp_path / "lib.so"
    write_elf(lib, fatbin_container([("sass", 35)]), needed=["libc.so.6"])
    return lib.read_bytes()


def _set(data: bytes, field: str, value: int) -> bytes:
    offset, fmt = FIELDS[field]
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


@pytest.mark.parametrize(
    ("changes", "why"),
    [({"e_shentsize": 0}, "e_shentsize = 0 for"), ({"e_shentsize": 1}, "e_shentsize = 1 for"),
     ({"e_phnum": 1, "e_phentsize": 0}, "e_phentsize = 0 for 1 program headers"),
     ({"e_shoff": 2**63}, "section headers (e_shoff = "),
     ({"e_phnum": 2, "e_phentsize": 56, "e_phoff": 2**40}, "program headers (e_phoff = "),
     ({"e_shnum": 65535}, "section headers"), ({"e_shstrndx": 999}, "e_shstrndx = 999 names no section")],
)  # fmt: skip
def test_an_impossible_header_is_exit_6_naming_the_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, int], why: str
) -> None:
    data = _elf(tmp_path)
    for field, value in changes.items():
        data = _set(data, field, value)
    bad = tmp_path / "bad.so"
    bad.write_bytes(data)
    wheel = write_wheel(tmp_path, "torch", "1.7.1", TAG, {"torch/lib/libtorch_cuda.so": bad})
    for argv in (["verify", str(wheel)], ["knowledge", "scan", str(wheel)]):
        assert main(argv) == 6
        err = capsys.readouterr().err
        assert err.startswith(f"error: {wheel.name}: torch/lib/libtorch_cuda.so: not a valid ELF file: ")
        assert why in " ".join(err.split())
        assert "internal error" not in err


def test_real_libraries_pass(tmp_path: Path) -> None:
    facts = read_elf(io.BytesIO(_elf(tmp_path)))
    assert facts.elf and facts.needed == ("libc.so.6",)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(FIELDS)), st.integers(min_value=0, max_value=2**64 - 1)),
        min_size=1,
        max_size=4,
    ),
    st.integers(min_value=0, max_value=200),
)
def test_any_header_is_read_or_refused(changes: list[tuple[str, int]], cut: int) -> None:
    data = _BASE
    for field, value in changes:
        fmt = FIELDS[field][1]
        data = _set(data, field, value % (1 << (8 * struct.calcsize(fmt))))
    if cut:
        data = data[: len(data) - cut]
    try:
        read_elf(io.BytesIO(data))
    except VerificationFailed as exc:
        assert exc.exit_code == 6 and "\n" not in exc.message


def _base() -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return _elf(Path(tmp))


_BASE = _base()
