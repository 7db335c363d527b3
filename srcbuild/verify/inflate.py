"""One wheel member as a stream of its inflated bytes, through ISA-L when it is installed.

``zipfile`` inflates with zlib. ISA-L's inflate (the ``isal`` package, python-isal) reads the same
deflate streams about 1.5 times faster, and inflating is most of what reading a large CUDA wheel
costs, so ``open_member`` reads a deflated member's bytes from the archive itself and inflates them
with ``isal.isal_zlib`` (zlib when isal is missing), checking what ``zipfile`` checks: the local
header's signature, no encryption, the declared size and the CRC-32 at the end (ISA-L's crc32 too:
zlib's took 2 of the 11 CPU seconds of reading the 1.2 GB of libraries in torch 2.0.1's CUDA wheel).
Both release the interpreter lock while they work, so members read on several threads inflate on
several cores. Anything else
(stored members) goes through ``zipfile``. Each ``read`` returns at most ``size`` bytes, however
well the data compresses.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

RAW_CHUNK = 256 * 1024
_LOCAL = struct.Struct("<4sHHHHHIIIHH")


def inflater() -> ModuleType:
    """``isal.isal_zlib`` when installed, else ``zlib`` (the same decompressobj interface)."""
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - isal is a dependency; zlib keeps a broken install working
        return zlib
    return isal_zlib


class MemberStream:
    """The inflated bytes of one deflated member (see the module docstring)."""

    def __init__(self, wheel: Path, info: zipfile.ZipInfo) -> None:
        self.info = info
        self.f: BinaryIO = open(wheel, "rb")  # noqa: SIM115 (closed by close(), the stream's own context)
        try:
            self.f.seek(info.header_offset)
            header = self.f.read(_LOCAL.size)
            if len(header) < _LOCAL.size:
                raise zipfile.BadZipFile("truncated local file header")
            signature, _v, flags, _method, _t, _d, _crc, _cs, _us, name_len, extra_len = _LOCAL.unpack(header)
            if signature != b"PK\x03\x04":
                raise zipfile.BadZipFile("bad magic number for file header")
            if flags & 0x1:
                raise NotImplementedError("encrypted member")
            self.f.seek(info.header_offset + _LOCAL.size + name_len + extra_len)
        except BaseException:
            self.f.close()
            raise
        self.left = info.compress_size
        module = inflater()
        self.inflate: Any = module.decompressobj(-15)
        self.crc32: Any = module.crc32
        self.errors: tuple[type[BaseException], ...] = (zlib.error, module.error)
        self.crc = 0
        self.out = 0
        self.done = False

    def read(self, size: int = 1024 * 1024) -> bytes:
        try:
            return self._read(size)
        except self.errors as exc:
            raise zipfile.BadZipFile(f"{self.info.filename}: {exc}") from None

    def _read(self, size: int) -> bytes:
        while not self.done:
            if self.inflate.unconsumed_tail:
                data = self.inflate.decompress(self.inflate.unconsumed_tail, size)
            elif self.left > 0:
                raw = self.f.read(min(RAW_CHUNK, self.left))
                if not raw:
                    raise EOFError(f"{self.info.filename}: the archive ends inside it")
                self.left -= len(raw)
                data = self.inflate.decompress(raw, size)
            else:  # all input given: what the inflater still holds, at most ``size`` at a time
                data = self.inflate.decompress(b"", size) if not self.inflate.eof else b""
                if data:
                    return self._count(data)
                data = self._count(self.inflate.flush())
                self._finish()
                return data
            if data:
                return self._count(data)
        return b""

    def _count(self, data: bytes) -> bytes:
        self.crc = self.crc32(data, self.crc)
        self.out += len(data)
        if self.out > self.info.file_size:
            raise zipfile.BadZipFile(f"{self.info.filename} inflates past its declared size")
        return data

    def _finish(self) -> None:
        self.done = True
        if not self.inflate.eof:
            raise zipfile.BadZipFile(f"{self.info.filename}: its deflate stream does not end")
        if self.out != self.info.file_size or self.crc != self.info.CRC:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {self.info.filename!r}")

    def close(self) -> None:
        self.f.close()

    def __enter__(self) -> MemberStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_member(wheel: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    """A stream of ``info``'s inflated bytes (a context manager with ``read(size)``)."""
    if info.compress_type == zipfile.ZIP_DEFLATED:
        return MemberStream(wheel, info)
    return zf.open(info)
