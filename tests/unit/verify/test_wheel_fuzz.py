"""Fuzzing ``srcbuild verify`` with mutated wheels: flipped bytes anywhere (deflate streams, local
and central headers, the ELF inside), truncation and appended junk. Whatever the bytes, verify exits
0, 2, 6 or 7 with one line naming the problem: never 70 (an internal error).

The CI budget is fixed and derandomized; ``SRCBUILD_FUZZ_EXAMPLES=20000`` runs a longer, random
search (as ``tests/unit/cache/test_fuzz.py`` does)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from srcbuild.cli import main
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel

LONG = int(os.environ.get("SRCBUILD_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=LONG or 120,
    derandomize=not LONG and os.environ.get("SRCBUILD_FUZZ_SEED", "") != "random",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
CLEAN_EXITS = {0, 2, 6, 7}
_WHEEL: dict[str, bytes] = {}


def pristine() -> bytes:
    """A small CUDA wheel: a library with two fat binary containers, links, and a version.py."""
    if not _WHEEL:
        with tempfile.TemporaryDirectory() as tmp:
            lib = Path(tmp) / "libtorch_cuda.so"
            blob = fatbin_container([("sass", 35), ("ptx", 37)]) + fatbin_container([("sass", 50)], compressed=True)
            write_elf(lib, blob * 20, needed=["libcudart.so.11.0"], soname="libtorch_cuda.so")
            wheel = write_wheel(
                Path(tmp),
                "torch",
                "1.7.1",
                "cp38-cp38-linux_x86_64",
                {"torch/lib/libtorch_cuda.so": lib, "torch/version.py": b"cuda = '11.0'\n"},
            )
            _WHEEL["bytes"] = wheel.read_bytes()
    return _WHEEL["bytes"]


def verify_exit(data: bytes) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / "torch-1.7.1-cp38-cp38-linux_x86_64.whl"
        wheel.write_bytes(data)
        return main(["verify", str(wheel), "--arch", "3.5", "--no-cross-check", "--no-host-mpi"])


def test_the_pristine_wheel_verifies() -> None:
    assert verify_exit(pristine()) == 0


@FUZZ
@given(flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=8))
def test_flipped_bytes_never_give_an_internal_error(flips: list[tuple[float, int]]) -> None:
    data = bytearray(pristine())
    for where, xor in flips:
        data[int(where * len(data))] ^= xor
    assert verify_exit(bytes(data)) in CLEAN_EXITS


@FUZZ
@given(cut=st.floats(0, 1), junk=st.binary(max_size=64))
def test_truncated_or_extended_wheels_never_give_an_internal_error(cut: float, junk: bytes) -> None:
    data = pristine()
    assert verify_exit(data[: int(cut * len(data))] + junk) in CLEAN_EXITS
