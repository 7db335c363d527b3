"""The streaming .nv_fatbin parser on synthetic ELF files (no NVIDIA tool needed)."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest

from srcbuild.errors import VerificationFailed
from srcbuild.verify import fatbin
from srcbuild.verify.fatbin import FatbinEntry, scan_elf
from tests.worlds.wheels import fatbin_container, write_cubin, write_elf


def test_entries_in_order_with_kinds_and_compression(tmp_path: Path) -> None:
    blob = fatbin_container([("sass", 35), ("sass", 37)]) + fatbin_container([("ptx", 50)], compressed=True)
    lib = tmp_path / "libk.so"
    write_elf(lib, blob)
    assert scan_elf(lib) == [
        FatbinEntry("sass", 35, False, (1, 7)),
        FatbinEntry("sass", 37, False, (1, 7)),
        FatbinEntry("ptx", 50, True, (7, 8)),
    ]


def test_padding_between_containers_is_skipped(tmp_path: Path) -> None:
    blob = fatbin_container([("sass", 61)]) + bytes(24) + fatbin_container([("ptx", 70)])
    lib = tmp_path / "libpad.so"
    write_elf(lib, blob, repeat=3)
    assert [(e.kind, e.sm) for e in scan_elf(lib)] == [("sass", 61), ("ptx", 70)] * 3


def test_file_object_and_path_agree(tmp_path: Path) -> None:
    lib = tmp_path / "libk.so"
    write_elf(lib, fatbin_container([("sass", 50), ("ptx", 50)]))
    with open(lib, "rb") as f:
        assert scan_elf(f) == scan_elf(str(lib))


def test_no_fatbin_section_gives_empty_list(tmp_path: Path) -> None:
    lib = tmp_path / "libcpu.so"
    write_elf(lib, b"")
    assert scan_elf(lib) == []


@pytest.mark.parametrize(
    ("e_flags", "abiversion", "sm"),
    [(0x230523, 7, 35), (0x250525, 7, 37), (0x6005004, 8, 80)],
)
def test_bare_cubin_sm_from_e_flags(tmp_path: Path, e_flags: int, abiversion: int, sm: int) -> None:
    cubin = tmp_path / "k.cubin"
    write_cubin(cubin, e_flags, abiversion)
    assert scan_elf(cubin) == [FatbinEntry("sass", sm)]


def test_not_elf_is_a_verification_error(tmp_path: Path) -> None:
    junk = tmp_path / "libjunk.so"
    junk.write_bytes(b"this is not ELF at all" * 4)
    with pytest.raises(VerificationFailed) as err:
        scan_elf(junk)
    assert err.value.message.startswith(f"{junk}: not a readable ELF file")


def test_memory_stays_bounded_on_a_large_section(tmp_path: Path) -> None:
    # 2000 containers with 16 KiB payloads: a 64 MiB section, read through a 64 KiB window.
    blob = fatbin_container([("sass", 35), ("sass", 37)], payload=16 * 1024)
    lib = tmp_path / "libbig.so"
    size = write_elf(lib, blob, repeat=2000)
    assert size > 60 * 1024 * 1024
    tracemalloc.start()
    entries = scan_elf(lib)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(entries) == 4000
    assert peak < 4 * fatbin.CHUNK + 2 * 1024 * 1024  # the window plus the entry list, not the section


def test_truncated_container_does_not_loop(tmp_path: Path) -> None:
    blob = fatbin_container([("sass", 35)])
    buf = io.BytesIO()
    lib = tmp_path / "libcut.so"
    write_elf(lib, blob[:40])
    buf.write(lib.read_bytes())
    buf.seek(0)
    assert scan_elf(buf) == []


def _set_fatbin_section(path: Path, offset: int | None = None, size: int | None = None) -> None:
    """Rewrite the ``.nv_fatbin`` section header (section 1) of a ``write_elf`` file."""
    import struct

    data = bytearray(path.read_bytes())
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    header = shoff + 64  # section 0 is the null section
    if offset is not None:
        struct.pack_into("<Q", data, header + 24, offset)
    if size is not None:
        struct.pack_into("<Q", data, header + 32, size)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("offset", "size"), [(2**63, None), (2**64 - 1, None), (None, 2**63 + 7), (10**9, None), (64, 2**40)]
)
def test_a_section_outside_the_file_is_a_verification_error(
    tmp_path: Path, offset: int | None, size: int | None
) -> None:
    lib = tmp_path / "libbad.so"
    file_size = write_elf(lib, fatbin_container([("sass", 35)]))
    _set_fatbin_section(lib, offset, size)
    with pytest.raises(VerificationFailed) as err:
        scan_elf(lib)
    assert err.value.message.startswith(f"{lib}: its fat binary section (offset ")
    assert err.value.message.endswith(f"lies outside the file ({file_size} bytes)")


def test_cross_check_pieces_are_whole_containers(tmp_path: Path) -> None:
    """The cuobjdump cross-check reads the section in runs of whole containers, at most the limit
    each (a larger container alone), padding between them skipped, every container in one run."""
    from srcbuild.verify.cuobjdump import fatbin_section, pieces

    one = fatbin_container([("sass", 35), ("sass", 37)])
    two = fatbin_container([("ptx", 50)], compressed=True)
    big = fatbin_container([("sass", 61)] * 40)
    blob = one + bytes(16) + two + big + two
    lib = tmp_path / "libk.so"
    write_elf(lib, blob)
    section = fatbin_section(lib)
    assert section is not None and section[1] == len(blob)
    start = section[0]
    data = lib.read_bytes()
    runs = list(pieces(lib, *section, limit=len(one) + 16 + len(two)))
    assert [(offset - start, length) for offset, length in runs] == [
        (0, len(one) + 16 + len(two)),  # padding inside a run travels with it
        (len(one) + 16 + len(two), len(big)),  # larger than the limit: alone
        (len(one) + 16 + len(two) + len(big), len(two)),
    ]
    for offset, _length in runs:
        assert int.from_bytes(data[offset : offset + 4], "little") == fatbin.FATBIN_MAGIC
    assert [(offset - start, length) for offset, length in pieces(lib, *section, limit=len(blob))] == [(0, len(blob))]
    assert fatbin_section(tmp_path / "missing.so") is None
