"""The platform tag of wheels holding real shared libraries built here: a C one (memcpy,
GLIBC_2.14) and a C++ one built with g++ 11 whose std::filesystem call links GLIBCXX_3.4.26, which
a manylinux2014 machine's libstdc++ lacks. The C++ wheel gets the newer tag auditwheel's policies
allow, verify names the version that keeps it there, and a portable check against a 2.17 sysroot
refuses it. ``auditwheel show`` on the same wheels agrees on the tag.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.findings import Severity
from srcbuild.verify.checks import check_portable
from srcbuild.verify.manylinux import wheel_platform_tag, wheel_tag_decision
from tests.conftest import require_tool
from tests.unit.cache.synthetic import host_tag, make_wheel

pytestmark = pytest.mark.integration

C_SOURCE = "#include <string.h>\nvoid c(char *d, const char *s, unsigned long n) { memcpy(d, s, n); }\n"
CXX_SOURCE = "#include <filesystem>\nbool e(const char *p) { return std::filesystem::exists(p); }\n"


def shared_library(
    directory: Path, compiler: str, name: str, source: str, suffix: str, links: tuple[str, ...] = ()
) -> bytes:
    found = shutil.which(compiler)
    require_tool(compiler, found)
    src = directory / f"{name}{suffix}"
    src.write_text(source)
    out = directory / f"lib{name}.so"
    argv = [str(found), "-shared", "-fPIC", "-O1", "-o", str(out), str(src), *links]
    subprocess.run([*argv, "-std=c++17"] if suffix == ".cc" else argv, check=True)
    return out.read_bytes()


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("manylinux")
    c = shared_library(tmp, "gcc", "copy", C_SOURCE, ".c")
    cxx = shared_library(tmp, "g++-11", "fs", CXX_SOURCE, ".cc")
    shared_library(tmp, "gcc", "ext", "int ext(void) { return 1; }\n", ".c")  # a library the wheel leaves out
    user = shared_library(
        tmp, "gcc", "user", "int ext(void);\nint u(void) { return ext(); }\n", ".c", ("-L", str(tmp), "-lext")
    )
    members = {"demo_ext/lib/libuser.so": user, "demo_ext/lib/libcopy.so": c}
    return {
        "ext": make_wheel(tmp / "ext", name="demo_ext", tag=host_tag(), extra=members),
        "c": make_wheel(tmp / "c", name="demo_c", tag=host_tag(), extra={"demo_c/lib/libcopy.so": c}),
        "cxx": make_wheel(tmp / "cxx", name="demo_cxx", tag=host_tag(), extra={"demo_cxx/lib/libfs.so": cxx}),
    }


def test_a_cxx_library_needing_a_newer_libstdcxx_gets_a_newer_tag(wheels: dict[str, Path]) -> None:
    c, cxx = wheel_tag_decision(wheels["c"]), wheel_tag_decision(wheels["cxx"])
    assert c is not None and cxx is not None
    assert c.tag == "manylinux_2_17_x86_64"  # GLIBC_2.14: manylinux_2_12 lacks it
    assert [n.text() for n in c.held_back_by] == ["GLIBC_2.14 (libcopy.so)"]
    assert cxx.tag == "manylinux_2_31_x86_64"  # GLIBC_2.14 alone would say manylinux_2_17
    assert "GLIBCXX_3.4.26 (libfs.so)" in [n.text() for n in cxx.held_back_by]
    assert wheel_platform_tag(wheels["cxx"]) == cxx.tag
    assert cxx.unbundled == ()  # libstdc++, libgcc_s, libm, libc: every manylinux machine has them
    ext = wheel_tag_decision(wheels["ext"])
    assert ext is not None and ext.unbundled == ("libext.so",) and ext.tag == c.tag  # named, not refused


def test_verify_reports_the_tag_and_what_keeps_it(wheels: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    main(["verify", str(wheels["cxx"]), "--arch", "3.0", "--no-cross-check", "--json"])  # no kernels: exit 6
    report = json.loads(capsys.readouterr().out)
    assert report["manylinux"] == "manylinux_2_31_x86_64"
    assert "GLIBCXX_3.4.26 (libfs.so)" in report["manylinux_held_back_by"]
    main(["verify", str(wheels["cxx"]), "--arch", "3.0", "--no-cross-check"])
    out = capsys.readouterr().out
    assert "platform tag manylinux_2_31_x86_64" in out
    assert "not older because of GLIBCXX_3.4.26 (libfs.so)" in out
    main(["verify", str(wheels["ext"]), "--arch", "3.0", "--no-cross-check"])
    assert "not bundled, the machine provides them: libext.so" in capsys.readouterr().out


def test_a_portable_check_warns_of_a_libstdcxx_newer_than_the_sysroots_policy(wheels: dict[str, Path]) -> None:
    assert check_portable(wheels["c"], "2.17") == []
    [finding] = check_portable(wheels["cxx"], "2.17")  # glibc is fine; libstdc++ makes the tag newer
    assert (finding.rule, finding.severity) == ("portable-libstdcxx", Severity.WARNING)
    assert finding.message.startswith("demo_cxx-")
    assert "needs a newer libstdc++ or libgcc_s than manylinux_2_17 machines have" in finding.message
    assert "@GLIBCXX_3.4.26 (libfs.so)" in finding.message


def test_auditwheel_agrees(wheels: dict[str, Path]) -> None:
    auditwheel = Path(sys.executable).parent / "auditwheel"
    require_tool("auditwheel", str(auditwheel) if auditwheel.exists() else None)
    for wheel in (wheels["c"], wheels["cxx"]):
        shown = subprocess.run([str(auditwheel), "show", str(wheel)], capture_output=True, text=True)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        said = " ".join(shown.stdout.split())
        assert f'consistent with the following platform tag: "{wheel_platform_tag(wheel)}"' in said, said
