"""``srcbuild verify`` on a damaged or hostile archive: a clean error, never a traceback or a full disk."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.errors import VerificationFailed
from srcbuild.verify.wheel import measure_wheel
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel

TAG = "cp38-cp38-linux_x86_64"


def test_a_zip_bomb_member_is_refused_before_it_is_extracted(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path, "torch", "1.7.1", TAG, {"torch/__init__.py": b""})
    info = zipfile.ZipInfo("torch/lib/libtorch_cuda.so")
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(wheel, "a") as zf, zf.open(info, "w", force_zip64=True) as out:
        for _ in range(64):
            out.write(bytes(1 << 20))
    assert wheel.stat().st_size < 1 << 20
    with pytest.raises(VerificationFailed) as err:
        measure_wheel(wheel)
    assert err.value.message.startswith(f"{wheel.name}: member torch/lib/libtorch_cuda.so expands ")
    assert err.value.message.endswith("times (more than 200): a zip bomb")


def test_a_bad_crc_is_exit_6(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = tmp_path / "libtorch_cuda.so"
    write_elf(lib, fatbin_container([("sass", 35)]))
    wheel = write_wheel(tmp_path, "torch", "1.7.1", TAG, {"torch/lib/libtorch_cuda.so": lib})
    data = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("torch/lib/libtorch_cuda.so")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    at = start + info.compress_size - 4  # the member's last bytes: past the ELF headers it is read by
    data[at] ^= 0xFF
    wheel.write_bytes(bytes(data))
    assert main(["verify", str(wheel), "--arch", "3.5"]) == 6
    err = capsys.readouterr().err
    assert err.startswith(f"error: {wheel.name}: member torch/lib/libtorch_cuda.so cannot be read (")
