"""Checks and small files every assembled CUDA home needs, whichever provider made it.

``nvcc_release`` asks the home's own nvcc for its version (the only proof a home works);
``NVCC_PROFILE`` is the relocatable ``bin/nvcc.profile`` for homes assembled from pieces (the
Debian packages spread the toolkit over ``/usr``); ``copy_tree`` merges one unpacked archive into
the home the way NVIDIA's installers lay it out; ``link_targets_layout`` makes a conda prefix,
whose headers and libraries sit under ``targets/x86_64-linux/``, answer at ``include/`` and
``lib64/`` too, where torch's build and CMake's FindCUDA look.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from srcbuild import proc
from srcbuild.errors import StepFailed
from srcbuild.host.parsers import parse_nvcc_version
from srcbuild.host.toolchain import missing_components

# $(_HERE_) is nvcc's own bin directory: the home works wherever it is moved.
NVCC_PROFILE = """TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib:$(TOP)/nvvm/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib"
"""


def nvcc_release(home: Path) -> str | None:
    out = proc.probe([str(home / "bin" / "nvcc"), "--version"], timeout=30)
    return parse_nvcc_version(out) if out else None


def check_nvcc(home: Path, expect: str, what: str) -> str:
    """The home's nvcc version; a StepFailed unless it starts with ``expect``."""
    found = nvcc_release(home)
    if found is None or not (found == expect or found.startswith(expect + ".")):
        raise StepFailed(
            f"{what}: the assembled nvcc reports {found or 'nothing'}, not CUDA {expect}",
            "rerun with --debug and report the log; nothing was installed",
        )
    return found


def check_complete(home: Path, version: str, what: str) -> None:
    """A StepFailed naming each component of the complete-home contract that ``home`` lacks."""
    missing = missing_components(home, version)
    if missing:
        raise StepFailed(
            f"{what} lacks {', '.join(missing)} (srcbuild/knowledge/data/cuda_components.toml); nothing was installed",
            "rerun with --debug and report the log",
        )


def copy_tree(src: Path, dest: Path) -> None:
    """Merge ``src`` into ``dest`` (directories merged, files and links copied as they are)."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        target = dest / item.name
        if item.is_dir() and not item.is_symlink():
            copy_tree(item, target)
        else:
            if target.is_symlink() or target.exists():
                target.unlink()
            if item.is_symlink():
                target.symlink_to(os.readlink(item))
            else:
                shutil.copy2(item, target)


TARGET_DIR = Path("targets") / "x86_64-linux"


def _link_entries(src: Path, dest: Path, relative_to_dest: str) -> None:
    """``dest`` -> ``src`` when ``dest`` is absent; else a link in ``dest`` per entry it lacks."""
    if not dest.exists() and not dest.is_symlink():
        dest.symlink_to(relative_to_dest)
        return
    for item in sorted(src.iterdir()):
        if not (dest / item.name).exists() and not (dest / item.name).is_symlink():
            (dest / item.name).symlink_to(os.path.relpath(item, dest))


def link_targets_layout(home: Path) -> None:
    """``include/`` and ``lib64/`` of ``home`` serve what ``targets/x86_64-linux/`` holds."""
    target = home / TARGET_DIR
    if (target / "include").is_dir():
        _link_entries(target / "include", home / "include", str(TARGET_DIR / "include"))
    if (target / "lib").is_dir():
        _link_entries(target / "lib", home / "lib64", str(TARGET_DIR / "lib"))
    elif (home / "lib").is_dir() and not (home / "lib64").exists():
        (home / "lib64").symlink_to("lib")
    profile = home / "bin" / "nvcc.profile"
    if (home / "bin" / "nvcc").exists() and not profile.exists():
        profile.write_text(NVCC_PROFILE)
