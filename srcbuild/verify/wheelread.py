"""Read every ELF file of a wheel: each member inflated once, as a stream, members in parallel.

``read_wheel(path)`` returns ``ElfFacts`` (``elfread``) per member: the CUDA kernels, the linked
libraries and the symbol versions each shared library or executable needs. Nothing is extracted:
each member streams from the zip (``inflate.open_member``: ISA-L's inflate when installed)
through ``elfread.ElfStream`` in 1 MiB pieces, so memory holds a
few pieces per worker and the tables the reader keeps, never a library. Members inflate on
``workers`` threads (zlib releases the interpreter lock while it inflates). What a wheel says about
itself is refused before a byte is inflated when it cannot be honest: a member or the whole wheel
expanding past ``limits``' bounds (zip bombs). A member that cannot be read (a corrupt deflate
stream, a bad CRC, an unknown compression) is ``VerificationFailed`` (exit 6) naming it.

The answer for a wheel file is kept (keyed by path, size, modification time and inode), however it
was read (with a cuobjdump hook or progress lines too): a build asks several times (the verify
report, the platform tag, the portable check, the cache manifest) and reads the wheel once.
"""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Optional

from srcbuild.errors import CacheIntegrityError, VerificationFailed
from srcbuild.verify.elfread import ElfFacts, ImpossibleElf, read_stream
from srcbuild.verify.inflate import open_member

_SO_RE = re.compile(r"\.so(\.\d+)*$")
# Called with (member name, a temporary copy of it, its facts) for each member that holds kernels.
MemberHook = Callable[[str, Path, ElfFacts], Any]
Progress = Callable[[str, int, int], None]  # (member just read, bytes read so far, bytes in all)


def is_library(name: str) -> bool:
    """``torch/lib/libtorch_cuda.so``, ``libcudnn.so.8``: a shared library by its name."""
    return bool(_SO_RE.search(name.rsplit("/", 1)[-1]))


def elf_candidates(zf: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The members that may be ELF files: shared libraries by name, and anything under a bin/."""
    return [
        info
        for info in zf.infolist()
        if not info.is_dir() and (is_library(info.filename) or "/bin/" in f"/{info.filename}")
    ]


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def open_wheel(path: Path) -> zipfile.ZipFile:
    """The wheel as a zip archive; VerificationFailed (exit 6) when it is not one."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise VerificationFailed(
            f"{path.name}: not a readable zip archive ({exc})", "rebuild the wheel; the file is damaged"
        ) from None


def _check_sizes(zf: zipfile.ZipFile, path: Path) -> None:
    from srcbuild.limits import check_expansion, check_member

    try:
        for info in zf.infolist():
            check_member(info, path.name)
        check_expansion(zf.infolist(), path.stat().st_size, path.name)
    except CacheIntegrityError as exc:
        raise VerificationFailed(exc.message, exc.hint) from None


def _read_member(
    path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, hook: Optional[MemberHook]
) -> tuple[ElfFacts, Any]:
    """One member's facts (and the hook's answer). ``zf`` is the wheel opened once for all members:
    a deflated member streams from its own file handle (``inflate.open_member``), a stored one through
    ``zf`` (zipfile serialises its reads); the central directory is parsed once per wheel, not per member
    (10,080 entries in torch 2.0.1's CUDA wheel: 0.2 s each time)."""
    wheel = path.name
    try:
        if hook is None:
            return read_stream(lambda: open_member(path, zf, info), info.file_size, info.filename), None
        with tempfile.TemporaryDirectory(prefix="srcbuild-verify-") as tmp:
            copy = Path(tmp) / "member.so"  # never the member's own name: it may be any length
            with open(copy, "wb") as out:
                facts = read_stream(lambda: open_member(path, zf, info), info.file_size, info.filename, tee=out)
            extra = hook(info.filename, copy, facts) if facts.entries else None
            return facts, extra
    except ImpossibleElf as exc:
        raise VerificationFailed(f"{wheel}: {exc.message}", exc.hint) from None
    except VerificationFailed as exc:
        reason = exc.message.split(": ", 1)[-1]
        return ElfFacts(size=info.file_size, elf=False, unreadable=reason), None
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, OSError) as exc:
        raise VerificationFailed(
            f"{wheel}: member {info.filename} cannot be read ({exc})", "the wheel is damaged; rebuild it"
        ) from None


def read_wheel(
    wheel: str | os.PathLike[str],
    *,
    hook: Optional[MemberHook] = None,
    progress: Optional[Progress] = None,
    workers: Optional[int] = None,
) -> dict[str, ElfFacts]:
    """``ElfFacts`` of every ELF member of ``wheel`` by member name, in the wheel's order (see the
    module docstring). ``hook`` runs for each member holding kernels, with a temporary copy of it
    (the cuobjdump cross-check); its results are in ``read_wheel_with``'s second answer."""
    return read_wheel_with(wheel, hook=hook, progress=progress, workers=workers)[0]


def read_wheel_with(
    wheel: str | os.PathLike[str],
    *,
    hook: Optional[MemberHook] = None,
    progress: Optional[Progress] = None,
    workers: Optional[int] = None,
    archive: Optional[zipfile.ZipFile] = None,
) -> tuple[dict[str, ElfFacts], dict[str, Any]]:
    """``read_wheel``'s answer and what ``hook`` returned per member. ``archive``: the wheel already
    opened by the caller (its central directory, 10,080 entries in torch's CUDA wheel, read once)."""
    path = Path(wheel)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    if hook is None and key in _KEPT:
        _KEPT.move_to_end(key)
        return _KEPT[key], {}
    if archive is None:
        with open_wheel(path) as zf:
            facts, extras = _read(path, zf, hook, progress, workers or default_workers())
    else:
        facts, extras = _read(path, archive, hook, progress, workers or default_workers())
    _KEPT[key] = facts  # read with a hook or progress, the facts are the same: a later ask reads nothing
    while len(_KEPT) > _KEEP:
        _KEPT.popitem(last=False)
    return facts, extras


_KEEP = 4
_KEPT: OrderedDict[tuple[str, int, int, int], dict[str, ElfFacts]] = OrderedDict()


def _read(
    path: Path, zf: zipfile.ZipFile, hook: Optional[MemberHook], progress: Optional[Progress], workers: int
) -> tuple[dict[str, ElfFacts], dict[str, Any]]:
    _check_sizes(zf, path)
    members = elf_candidates(zf)
    total = sum(info.file_size for info in members)
    done = 0
    found: dict[str, tuple[ElfFacts, Any]] = {}
    largest_first = sorted(members, key=lambda info: -info.file_size)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_read_member, path, zf, info, hook): info for info in largest_first}
        try:
            for future in as_completed(futures):
                info = futures[future]
                found[info.filename] = future.result()
                done += info.file_size
                if progress is not None:
                    progress(info.filename, done, total)
        finally:
            for future in futures:
                future.cancel()
    facts = {}
    extras = {}
    for info in members:
        member_facts, extra = found[info.filename]
        if not member_facts.elf and not is_library(info.filename):
            continue  # a script or data file under bin/
        facts[info.filename] = member_facts
        if extra is not None:
            extras[info.filename] = extra
    return facts, extras
