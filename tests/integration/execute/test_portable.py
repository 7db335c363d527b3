"""Portable builds of the fixture world: the conda gcc and a sysroot_linux-64 2.17 package come from a
local conda channel, the wheel comes out tagged manylinux_2_X, pip in a fresh venv installs it, a
wheel that needs a newer glibc than the sysroot's is refused (exit 6, naming the symbol), and one
that needs a newer libstdc++ than the sysroot's manylinux policy provides gets the newer tag.

The sysroot package is a STAND-IN built from this machine's glibc (tests/worlds/conda_compiler.py
says why): no real glibc 2.17 sysroot can be fetched here, so the glibc refusal is shown with a
patch that calls memfd_create (GLIBC_2.27), which the stand-in's newer glibc lets link.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from srcbuild.verify.symbols import manylinux_tag, wheel_glibc
from tests.conftest import require_tool
from tests.integration.execute.conftest import CP, Srcbuild, srcbuild_env
from tests.worlds.conda_channel import channel_url, make_channel
from tests.worlds.conda_compiler import SYSROOT, host_gcc_packages, standin_sysroot_package
from tests.worlds.gitworld import World

pytestmark = pytest.mark.integration
PATCHES = Path(__file__).parent / "patches"


@pytest.fixture
def portable(world: World, build_venv: Path, cuda118_home: Path, gcc11: Path, tmp_path: Path) -> Srcbuild:
    require_tool("update-alternatives", shutil.which("update-alternatives"))
    channel = make_channel(tmp_path / "conda-forge", [*host_gcc_packages(sysroot=True), standin_sysroot_package()])
    env = srcbuild_env(cuda118_home)
    env["SRCBUILD_CHANNEL_MIRRORS"] = f"conda-forge={channel_url(channel)}"
    env["SRCBUILD_TOOLCHAIN_DIR"] = str(tmp_path / "toolchains")
    env["SRCBUILD_PATCHES_PATH"] = str(PATCHES)
    return Srcbuild(env, world, build_venv)


def test_a_portable_build_is_tagged_manylinux_and_pip_installs_it(portable: Srcbuild, tmp_path: Path) -> None:
    prefix = tmp_path / "toolchains" / "gcc-11-sysroot2.17-conda"
    refused = portable.run("torch", "world-kepler-cu118", "--portable", "--no-provision")
    assert refused.rc == 4, refused.out
    assert "a portable build needs conda-forge's gcc_linux-64 11 with sysroot_linux-64 2.17" in refused.out
    assert "srcbuild toolchain install gcc 11 --from conda --sysroot 2.17" in refused.out

    plan = portable.run("plan", "world-kepler-cu118", "torch", "--portable", "--format", "json")
    assert plan.rc == 0, plan.out
    data = json.loads(plan.out)
    steps = {s["id"]: s for s in data["steps"]}
    assert steps["provision"]["action"]["args"] == {"gcc": str(prefix)}
    assert [s["id"] for s in data["steps"]][-3:] == ["verify", "retag", "cache"]
    setting = next(s for s in data["settings"] if s["name"] == "portable")
    assert setting["source"] == "command line --portable"
    shell = portable.run("plan", "world-kepler-cu118", "torch", "--portable", "--format", "shell")
    assert "srcbuild toolchain install gcc 11 --from conda --sysroot 2.17" in shell.out
    assert '-m wheel tags --platform-tag "$tag" --remove "$wheel"' in shell.out

    ran = portable.run("torch", "world-kepler-cu118", "--portable")
    assert ran.rc == 0, ran.out
    wheel = Path(ran.last_line)
    needed = wheel_glibc(wheel)
    assert needed is not None and needed <= (2, 17)
    tag = manylinux_tag(needed, "x86_64")  # never older than manylinux_2_5, the oldest pip takes
    assert wheel.name == f"torch-2.5.1+cu118.sm35.sm37-{CP}-{CP}-{tag}.whl"
    assert f"needs glibc {needed[0]}.{needed[1]} (sysroot 2.17): {tag}" in ran.out
    with zipfile.ZipFile(wheel) as zf:  # WHEEL and RECORD were rewritten by `python -m wheel tags`
        info = zf.read("torch-2.5.1+cu118.sm35.sm37.dist-info/WHEEL").decode()
        record = zf.read("torch-2.5.1+cu118.sm35.sm37.dist-info/RECORD").decode()
        assert f"Tag: {CP}-{CP}-{tag}" in info and "linux_x86_64" not in info
        assert "dist-info/WHEEL,sha256=" in record
    # the compiler was the conda gcc of the provisioned prefix, building through its sysroot
    links = portable.work_dir / "compilers" / "gcc-11-sysroot2.17" / "bin"
    assert (links / "gcc").resolve() == (prefix / "bin" / "x86_64-conda-linux-gnu-gcc").resolve()
    said = subprocess.run([str(links / "gcc"), "-print-sysroot"], capture_output=True, text=True, check=True)
    assert Path(said.stdout.strip()) == prefix / SYSROOT
    manifest = json.loads(next(portable.cache_dir.rglob("manifest.json")).read_text())
    assert manifest["portable"] == {"sysroot_glibc": "2.17", "platform_tag": tag}
    assert manifest["key_inputs"]["sysroot"] == "2.17" and manifest["wheel"] == wheel.name

    again = portable.run("torch", "world-kepler-cu118", "--portable")  # the portable entry is found
    assert again.rc == 0 and "cache hit" in again.out and again.last_line == str(wheel), again.out
    plain = portable.run("plan", "world-kepler-cu118", "torch", "--format", "json")  # not portable: another key
    assert "retag" not in [s["id"] for s in json.loads(plain.out)["steps"]]

    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps", str(wheel)]
    installed = subprocess.run(pip, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / "torch").is_dir()


def test_a_portable_wheel_needing_a_newer_glibc_is_refused(portable: Srcbuild) -> None:
    ran = portable.run("torch", "world-portable-memfd")
    assert ran.rc == 6, ran.out
    assert "a portable build must need glibc 2.17 at most" in ran.out
    assert "memfd_create@GLIBC_2.27 (libtorch_cpu.so)" in ran.out
    assert not list(portable.cache_dir.rglob("*.whl"))


def test_a_portable_wheel_needing_a_newer_libstdcxx_gets_the_newer_tag(portable: Srcbuild) -> None:
    ran = portable.run("torch", "world-portable-glibcxx")  # a C++ op: std::filesystem, GLIBCXX_3.4.26
    assert ran.rc == 0, ran.out
    said = " ".join(ran.out.split())
    assert "needs a newer libstdc++ or libgcc_s than manylinux_2_17 machines have" in said
    assert "@GLIBCXX_3.4.26 (libtorch_cpu.so)" in said
    wheel = Path(ran.last_line)
    assert wheel.name.endswith("-manylinux_2_31_x86_64.whl")  # manylinux_2_28's libstdc++ stops at 3.4.24
    assert wheel_glibc(wheel) is not None and wheel_glibc(wheel) <= (2, 17)  # the sysroot still bounds glibc


def test_the_portable_shell_plan_provisions_builds_and_retags_the_same_wheel(
    portable: Srcbuild, tmp_path: Path
) -> None:
    plan = portable.run("plan", "world-kepler-cu118", "torch", "--portable", "--format", "shell")
    assert plan.rc == 0, plan.out
    script = tmp_path / "build.sh"
    script.write_text(plan.out)
    env = {**portable.env, "PATH": f"{Path(sys.executable).parent}:{portable.env['PATH']}"}  # `srcbuild` itself
    by_hand = subprocess.run(
        ["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert by_hand.returncode == 0, by_hand.stdout
    (hand_wheel,) = (portable.checkout("world-kepler-cu118") / "dist").glob("torch-*.whl")
    assert "-manylinux_2_" in hand_wheel.name
    assert (tmp_path / "toolchains" / "gcc-11-sysroot2.17-conda" / SYSROOT).is_dir()
    kept = tmp_path / hand_wheel.name
    hand_wheel.rename(kept)

    ran = portable.run("torch", "world-kepler-cu118", "--portable")
    assert ran.rc == 0, ran.out
    assert Path(ran.last_line).name == kept.name
