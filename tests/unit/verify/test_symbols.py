"""The manylinux tag a glibc requirement allows, the symbols behind it, and the portable check."""

from __future__ import annotations

import os
import re
import sys
import zipfile
from pathlib import Path

from srcbuild.findings import Severity
from srcbuild.verify.checks import check_portable
from srcbuild.verify.manylinux import wheel_platform_tag
from srcbuild.verify.symbols import (
    glibc_text,
    glibc_versions,
    linux_arch,
    manylinux_tag,
    symbols_newer_than,
)


def test_manylinux_tag_and_text() -> None:
    assert manylinux_tag((2, 17), "x86_64") == "manylinux_2_17_x86_64"
    assert manylinux_tag(None, "aarch64") == "manylinux_2_17_aarch64"  # the oldest pip accepts there
    assert manylinux_tag((2, 2), "x86_64") == manylinux_tag(None, "x86_64") == "manylinux_2_5_x86_64"
    assert glibc_text((2, 36)) == "2.36" and glibc_text(None) == ""
    assert glibc_versions(b"not an ELF file") == set()
    assert glibc_versions(b"\x7fELF truncated") == set()


def _python_elf() -> bytes:
    """A real ELF file of this machine (the interpreter), read, not run."""
    return Path(os.path.realpath(sys.executable)).read_bytes()


def _wheel_with(tmp_path: Path, data: bytes, platform: str = "linux_x86_64") -> Path:
    wheel = tmp_path / f"demo-1.0-cp311-cp311-{platform}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("demo/lib/libdemo.so", data)
        zf.writestr("demo/__init__.py", b"")
    return wheel


def test_the_symbols_behind_a_glibc_version_are_named() -> None:
    data = _python_elf()
    newest = max(glibc_versions(data))
    below = (newest[0], newest[1] - 1)
    named = symbols_newer_than(data, below)
    assert named and all(s.endswith(f"@GLIBC_{newest[0]}.{newest[1]}") for s in named)
    assert all("@GLIBC_" in s and not s.startswith("@") for s in symbols_newer_than(data, (2, 0)))
    assert symbols_newer_than(data, newest) == []
    assert symbols_newer_than(b"not an ELF file", (2, 17)) == []


def test_the_platform_tag_a_wheel_allows(tmp_path: Path) -> None:
    data = _python_elf()
    major, minor = max(glibc_versions(data))
    wheel = _wheel_with(tmp_path, data)
    assert wheel_platform_tag(wheel) == f"manylinux_{major}_{minor}_x86_64"  # the interpreter is C
    assert linux_arch(["manylinux_2_28_x86_64"]) == "x86_64" and linux_arch(["linux_aarch64"]) == "aarch64"
    assert linux_arch(["any"]) == "" and wheel_platform_tag(_wheel_with(tmp_path, data, "any")) == ""


def test_a_portable_wheel_may_need_nothing_newer_than_its_sysroot(tmp_path: Path) -> None:
    data = _python_elf()
    major, minor = max(glibc_versions(data))
    wheel = _wheel_with(tmp_path, data)
    [finding] = check_portable(wheel, f"{major}.{minor - 1}")
    assert finding.rule == "portable-glibc" and finding.severity is Severity.ERROR
    floor = f"{major}.{minor - 1}"
    assert finding.message.startswith(f"a portable build must need glibc {floor} at most, but {wheel.name} uses ")
    first = symbols_newer_than(data, (major, minor - 1))[0]
    assert f"{first} (libdemo.so)" in finding.message
    assert check_portable(wheel, f"{major}.{minor}") == []


def test_a_sysroot_older_than_every_policy_is_bounded_by_its_glibc(tmp_path: Path) -> None:
    """Every symbol newer than glibc 2.17 counts (named, or in "and N more"), not only those newer
    than riscv64's oldest policy; how many there are depends on this machine's interpreter (a
    distribution's python3 needs dozens, so the newest may be among the ones counted)."""
    data = _python_elf()
    wheel = _wheel_with(tmp_path, data, "linux_riscv64")  # manylinux_2_31 is riscv64's oldest policy
    [finding] = check_portable(wheel, "2.17")
    assert finding.message.startswith(f"a portable build must need glibc 2.17 at most, but {wheel.name}")
    expected = symbols_newer_than(data, (2, 17))
    named = re.findall(r"([^\s,]+@GLIBC_[\d.]+) \(libdemo\.so\)", finding.message)
    more = re.search(r" and (\d+) more$", finding.message)
    assert named and set(named) <= set(expected)
    assert len(named) + (int(more.group(1)) if more else 0) == len(expected)
