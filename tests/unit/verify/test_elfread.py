"""The streaming ELF and wheel reader agrees with the seeking readers, whatever the chunking, and
turns every damaged or hostile wheel into a clean error naming the member."""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.errors import VerificationFailed
from srcbuild.verify.elfdeps import read_dynamic
from srcbuild.verify.elfread import read_elf, read_stream
from srcbuild.verify.fatbin import count_entries
from srcbuild.verify.symbols import version_needs
from srcbuild.verify.wheel import measure_wheel
from srcbuild.verify.wheelread import read_wheel
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel

TAG = "cp38-cp38-linux_x86_64"


def facts_in_chunks(path: Path, chunk: int):  # type: ignore[no-untyped-def]
    data = path.read_bytes()
    return read_stream(lambda: io.BytesIO(data), len(data), path.name, chunk=chunk)


def test_a_synthetic_library_reads_the_same_as_the_seeking_readers(tmp_path: Path) -> None:
    lib = tmp_path / "libk.so"
    blob = fatbin_container([("sass", 35), ("sass", 37), ("ptx", 37)]) + fatbin_container([("sass", 50)])
    write_elf(lib, blob, repeat=3, needed=["libcudart.so.11.0", "libc.so.6"], soname="libk.so")
    expected = count_entries(lib)
    with open(lib, "rb") as f:
        dynamic = read_dynamic(f)
    for chunk in (1, 7, 16, 61, 4096, 1 << 20):
        facts = facts_in_chunks(lib, chunk)
        assert facts.entries == expected, chunk
        assert facts.dynamic == dynamic, chunk
    assert read_elf(lib).entries[next(iter(expected))] == 3


def test_the_interpreter_reads_the_same_version_needs_as_pyelftools() -> None:
    exe = Path(sys.executable).resolve()
    data = exe.read_bytes()
    if not data.startswith(b"\x7fELF"):
        pytest.skip(f"{exe} is not an ELF file")
    with open(exe, "rb") as f:
        dynamic = read_dynamic(f)
    for chunk in (4093, 1 << 20):
        facts = facts_in_chunks(exe, chunk)
        assert set(facts.versions) == set(version_needs(data))
        assert facts.dynamic == dynamic


def test_a_file_that_is_not_elf_says_so(tmp_path: Path) -> None:
    script = tmp_path / "libx.so"
    script.write_bytes(b"/* GNU ld script */\nINPUT(libx.so.1)\n")
    facts = read_elf(script)
    assert not facts.elf and facts.unreadable == "not a readable ELF file (it starts with b'/* G')"


def _wheel_with_library(tmp_path: Path, member: str = "torch/lib/libtorch_cuda.so") -> Path:
    lib = tmp_path / "libtorch_cuda.so"
    write_elf(lib, fatbin_container([("sass", 35)]) * 200, needed=["libc.so.6"])
    return write_wheel(tmp_path, "torch", "1.7.1", TAG, {member: lib})


def test_a_corrupt_deflate_stream_is_exit_6_naming_the_member(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wheel = _wheel_with_library(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("torch/lib/libtorch_cuda.so")
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data = bytearray(wheel.read_bytes())
    data[start : start + 64] = bytes(range(64))  # garbage where the deflate stream begins
    wheel.write_bytes(bytes(data))
    with pytest.raises(VerificationFailed) as err:
        read_wheel(wheel, workers=2)
    assert err.value.message.startswith(f"{wheel.name}: member torch/lib/libtorch_cuda.so cannot be read (")
    assert main(["verify", str(wheel), "--arch", "3.5"]) == 6
    assert "member torch/lib/libtorch_cuda.so cannot be read" in capsys.readouterr().err


def test_a_300_character_member_name_is_read(tmp_path: Path) -> None:
    member = "torch/lib/" + "x" * 290 + ".so"
    wheel = _wheel_with_library(tmp_path, member)
    seen: list[str] = []
    report = measure_wheel(wheel, library_hook=lambda name, copy, entries, relfat: seen.append(name))
    assert [lib.name for lib in report.libraries] == [member] and seen == [member]
    assert report.kernels.sass == frozenset({35})


def test_many_members_that_expand_too_much_together_are_a_zip_bomb(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path, "torch", "1.7.1", TAG, {"torch/__init__.py": b""})
    with zipfile.ZipFile(wheel, "a") as zf:
        for i in range(20):  # each 15 MiB: under the per-member check's floor, 300 MiB together
            info = zipfile.ZipInfo(f"torch/lib/lib{i}.so")
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as out:
                for _ in range(15):
                    out.write(bytes(1 << 20))
    with pytest.raises(VerificationFailed) as err:
        read_wheel(wheel)
    assert err.value.message.startswith(f"{wheel.name}: its members unpack to ")
    assert err.value.message.endswith("a zip bomb")


def test_members_are_read_in_parallel_with_the_same_answer(tmp_path: Path) -> None:
    files = {}
    for i, sm in enumerate((35, 50, 61, 70, 75)):
        lib = tmp_path / f"lib{i}.so"
        write_elf(lib, fatbin_container([("sass", sm), ("ptx", sm)]) * 50, needed=[f"libdep{i}.so"])
        files[f"pkg/lib/lib{i}.so"] = lib
    wheel = write_wheel(tmp_path, "pkg", "1.0", TAG, files)
    one, four = read_wheel(wheel, workers=1, progress=lambda *a: None), read_wheel(wheel, workers=4)
    assert list(one) == list(four) == sorted(files)
    assert {m: f.entries for m, f in one.items()} == {m: f.entries for m, f in four.items()}
    assert four["pkg/lib/lib2.so"].needed == ("libdep2.so",)


def test_a_member_inflates_to_what_zipfile_reads_and_a_bad_crc_is_caught(tmp_path: Path) -> None:
    from srcbuild.verify.inflate import open_member

    wheel = _wheel_with_library(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("torch/lib/libtorch_cuda.so")
        with open_member(wheel, zf, info) as stream:
            pieces = list(iter(lambda: stream.read(4096), b""))
        assert b"".join(pieces) == zf.read(info) and max(map(len, pieces)) <= 4096
        info.CRC ^= 1
        with pytest.raises(zipfile.BadZipFile, match="Bad CRC-32"), open_member(wheel, zf, info) as stream:
            while stream.read(1 << 20):
                pass


def test_the_second_pass_stops_before_the_dynamic_section() -> None:
    """ld puts ``.gnu.version_r`` before ``.dynamic``: the stream learns of it late and reads the file's
    start again, up to it; the dynamic section itself was kept the first time it passed."""
    import sysconfig

    from elftools.elf.elffile import ELFFile

    lib = Path(sysconfig.get_config_var("LIBDIR") or "/", sysconfig.get_config_var("INSTSONAME") or "none")
    if not lib.is_file() or lib.read_bytes()[:4] != b"\x7fELF":
        pytest.skip("this interpreter has no shared libpython to read")
    data = lib.read_bytes()
    dynamic = ELFFile(io.BytesIO(data)).get_section_by_name(".dynamic")
    if dynamic is None or dynamic["sh_offset"] < 1 << 20:
        pytest.skip(f"{lib.name}'s dynamic section is not past its first MiB")
    reads: list[int] = []  # how far each stream of the file was read

    class Counted(io.BytesIO):
        def close(self) -> None:
            reads.append(self.tell())
            super().close()

    facts = read_stream(lambda: Counted(data), len(data), lib.name, chunk=4096)
    assert set(facts.versions) == set(version_needs(data))
    assert len(reads) == 2 and reads[1] < dynamic["sh_offset"]


def test_a_wheel_read_with_progress_is_not_read_again(tmp_path: Path) -> None:
    wheel = _wheel_with_library(tmp_path)
    seen: list[str] = []
    first = read_wheel(wheel, progress=lambda member, done, total: seen.append(member))
    assert seen == ["torch/lib/libtorch_cuda.so"]
    assert read_wheel(wheel) is first  # kept by path, size, modification time and inode
