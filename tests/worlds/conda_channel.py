"""A local conda channel made of hand-made packages, for offline environment tests.

``make_channel(root, packages)`` writes each ``FakePackage`` as a ``.tar.bz2`` (``info/index.json``,
``info/paths.json``, ``info/files``, the payload and an optional post-link script) into
``root/<subdir>/`` and indexes the channel with ``rattler.index.index_fs`` (a coroutine). The
archives are deterministic (fixed mtimes and owners), so the same package always has the same hash.

``torch_build_channels(root)`` builds the two channels a torch 1.x build environment asks for:
``conda-forge`` (a fake Python 3.8, numpy, cmake, mkl, ... with real version constraints between
them, ``libgreet``/``hello``, a package with a prefix placeholder, compiler packages, a package
needing the ``__cuda`` virtual package, and ``slowlink``, whose post-link script waits so tests can
interrupt a creation) and ``pytorch`` (magma-cudaXX). ``host_python_packages()`` makes a ``python``
that runs the test interpreter venv-style, plus ``pip``, for the pip step of a conda environment.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

FIXED_MTIME = 1_600_000_000
PREFIX_PLACEHOLDER = "/opt/anaconda1anaconda2anaconda3"  # conda-build's placeholder for the install prefix


@dataclass(frozen=True)
class FakePackage:
    """One conda package: its metadata, its files and, optionally, a post-link script."""

    name: str
    version: str
    build: str = "h0_0"
    build_number: int = 0
    depends: tuple[str, ...] = ()
    files: Mapping[str, bytes] = field(default_factory=dict)
    executables: tuple[str, ...] = ()  # paths in ``files`` that get mode 0o755
    noarch: bool = False
    post_link: str | None = None  # shell text run by the installer after linking
    symlinks: Mapping[str, str] = field(default_factory=dict)  # path -> link target

    @property
    def subdir(self) -> str:
        return "noarch" if self.noarch else "linux-64"

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.version}-{self.build}.tar.bz2"


def _index_json(pkg: FakePackage) -> dict[str, object]:
    index: dict[str, object] = {
        "name": pkg.name,
        "version": pkg.version,
        "build": pkg.build,
        "build_number": pkg.build_number,
        "depends": list(pkg.depends),
        "license": "BSD-3-Clause",
        "subdir": pkg.subdir,
        "timestamp": FIXED_MTIME * 1000,
    }
    if pkg.noarch:
        index["noarch"] = "generic"
    else:
        index["arch"] = "x86_64"
        index["platform"] = "linux"
    return index


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = FIXED_MTIME
    info.mode = mode
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    tar.addfile(info, io.BytesIO(data))


def write_package(pkg: FakePackage, channel: Path) -> Path:
    """Write ``pkg`` into ``channel/<subdir>/`` and return the archive's path."""
    files = dict(pkg.files)
    if pkg.post_link is not None:
        files[f"bin/.{pkg.name}-post-link.sh"] = pkg.post_link.encode()
    paths = [
        {
            "_path": path,
            "path_type": "hardlink",
            "sha256": hashlib.sha256(data).hexdigest(),
            "size_in_bytes": len(data),
        }
        for path, data in sorted(files.items())
    ]
    for entry in paths:  # text files naming the build prefix get the install prefix instead
        if PREFIX_PLACEHOLDER.encode() in files.get(str(entry["_path"]), b""):
            entry.update(prefix_placeholder=PREFIX_PLACEHOLDER, file_mode="text")
    paths += [{"_path": path, "path_type": "softlink"} for path in sorted(pkg.symlinks)]
    paths.sort(key=lambda entry: str(entry["_path"]))
    out = channel / pkg.subdir / pkg.file_name
    out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:bz2", compresslevel=1) as tar:
        _add(tar, "info/index.json", json.dumps(_index_json(pkg), indent=2, sort_keys=True).encode())
        _add(tar, "info/paths.json", json.dumps({"paths": paths, "paths_version": 1}, indent=2).encode())
        _add(tar, "info/files", "".join(f"{p}\n" for p in sorted([*files, *pkg.symlinks])).encode())
        for path, data in sorted(files.items()):
            executable = path in pkg.executables or path.startswith("bin/")
            _add(tar, path, data, 0o755 if executable else 0o644)
        for path, target in sorted(pkg.symlinks.items()):
            link = tarfile.TarInfo(path)
            link.type = tarfile.SYMTYPE
            link.linkname = target
            link.mtime = FIXED_MTIME
            tar.addfile(link)
    out.write_bytes(buffer.getvalue())
    return out


def make_channel(root: Path, packages: Iterable[FakePackage]) -> Path:
    """Write every package into the channel directory ``root`` and index it; return ``root``."""
    import rattler.index

    root.mkdir(parents=True, exist_ok=True)
    (root / "noarch").mkdir(exist_ok=True)  # a channel always has noarch, even if empty
    for pkg in packages:
        write_package(pkg, root)
    asyncio.run(rattler.index.index_fs(root, force=True))
    return root


def channel_url(root: Path) -> str:
    return root.resolve().as_uri()


def _script(text: str) -> bytes:
    return ("#!/bin/sh\n" + text + "\n").encode()


def fake_python(version: str = "3.8.10") -> FakePackage:
    """A stand-in interpreter: ``bin/python --version`` answers like the real one."""
    short = ".".join(version.split(".")[:2])
    body = _script(f'case "$1" in --version|-V) echo "Python {version}";; *) echo "fake python {version}" >&2;; esac')
    return FakePackage(
        "python",
        version,
        build="h0_0_cpython",
        files={
            "bin/python": body,
            f"bin/python{short}": body,
            f"lib/python{short}/site-packages/README.txt": b"site-packages of a fake python\n",
        },
    )


def _pylib(name: str, version: str, depends: tuple[str, ...] = ("python >=3.8,<3.9",)) -> FakePackage:
    return FakePackage(
        name,
        version,
        build="py38_0",
        depends=depends,
        files={f"lib/python3.8/site-packages/{name}/__init__.py": f"__version__ = '{version}'\n".encode()},
    )


def greet_packages() -> list[FakePackage]:
    """``libgreet`` 1.0 and 2.0, and ``hello`` 0.1 which needs ``libgreet >=1.0,<2``."""
    return [
        FakePackage("libgreet", "1.0", files={"lib/greet.txt": b"libgreet 1.0\n"}),
        FakePackage("libgreet", "2.0", files={"lib/greet.txt": b"libgreet 2.0\n"}),
        FakePackage(
            "hello",
            "0.1",
            depends=("libgreet >=1.0,<2",),
            files={"bin/hello": _script('echo "hello from $(cat "$(dirname "$0")/../lib/greet.txt")"')},
        ),
    ]


def conda_forge_packages() -> list[FakePackage]:
    """The torch 1.x build dependencies, with versioned dependencies between them."""
    return [
        fake_python("3.8.10"),
        FakePackage("libuv", "1.40.0", files={"lib/libuv.txt": b"libuv 1.40\n"}),
        FakePackage("libuv", "1.44.2", files={"lib/libuv.txt": b"libuv 1.44\n"}),
        FakePackage(
            "cmake",
            "3.18.2",
            depends=("libuv >=1.40,<2",),
            files={"bin/cmake": _script('echo "cmake version 3.18.2"')},
        ),
        FakePackage(
            "cmake",
            "3.27.9",
            depends=("libuv >=1.44,<2",),
            files={"bin/cmake": _script('echo "cmake version 3.27.9"')},
        ),
        FakePackage(
            "cmake",
            "4.0.2",
            depends=("libuv >=1.48,<2",),  # no such libuv: cmake 4 cannot be installed here
            files={"bin/cmake": _script('echo "cmake version 4.0.2"')},
        ),
        FakePackage("ninja", "1.11.1", files={"bin/ninja": _script('echo "1.11.1"')}),
        FakePackage("mkl", "2020.2", files={"lib/libmkl_rt.txt": b"mkl 2020.2\n"}),
        FakePackage("mkl-include", "2020.2", files={"include/mkl.h": b"/* mkl 2020.2 */\n"}),
        _pylib("numpy", "1.19.5", depends=("python >=3.8,<3.9", "mkl >=2020,<2021")),
        _pylib("numpy", "2.0.2", depends=("python >=3.9",)),
        _pylib("pyyaml", "5.4.1"),
        _pylib("setuptools", "59.5.0"),
        _pylib("setuptools", "69.5.1"),
        _pylib("cffi", "1.14.6"),
        _pylib("typing_extensions", "4.7.1"),
        FakePackage(
            "libgreet-dev",
            "1.0",
            depends=("libgreet 1.0",),
            files={"lib/pkgconfig/greet.pc": f"prefix={PREFIX_PLACEHOLDER}\nlibdir=${{prefix}}/lib\n".encode()},
        ),
        FakePackage(
            "cudatoolkit",
            "9.2.148",
            depends=("__glibc >=2.17", "__cuda >=9.2"),  # virtual packages: the system, not the channel
            files={"lib/libcudart.txt": b"cudart 9.2\n"},
        ),
        FakePackage(
            "gcc_linux-64",
            "7.5.0",
            files={
                "bin/x86_64-conda-linux-gnu-gcc": _script('echo "x86_64-conda-linux-gnu-gcc (conda) 7.5.0"'),
            },
        ),
        FakePackage(
            "gxx_linux-64",
            "7.5.0",
            depends=("gcc_linux-64 7.5.0",),
            files={
                "bin/x86_64-conda-linux-gnu-g++": _script('echo "x86_64-conda-linux-gnu-g++ (conda) 7.5.0"'),
            },
        ),
    ]


def pytorch_packages() -> list[FakePackage]:
    return [
        FakePackage("magma-cuda92", "2.5.2", build="1", files={"lib/libmagma.txt": b"magma for cuda 9.2\n"}),
        FakePackage("magma-cuda102", "2.5.2", build="1", files={"lib/libmagma.txt": b"magma for cuda 10.2\n"}),
    ]


def slow_link_package(marker_var: str = "SRCBUILD_TEST_SLOW_LINK") -> FakePackage:
    """A package whose post-link script, when ``$marker_var`` names a file, touches it and waits.

    It waits until the file named by ``$<marker_var>_RELEASE`` exists, or 60 s without one. Tests
    use it to stop an environment creation half-way, at a moment they can see: to kill it, or to
    start a second creation of the same environment meanwhile.
    """
    script = f"""if [ -n "${marker_var}" ]; then
  touch "${marker_var}"
  i=0
  while [ $i -lt 1200 ]; do
    if [ -n "${marker_var}_RELEASE" ] && [ -e "${marker_var}_RELEASE" ]; then break; fi
    sleep 0.05
    i=$((i + 1))
  done
fi
exit 0
"""
    return FakePackage("slowlink", "1.0", files={"share/slowlink/README": b"slow to link\n"}, post_link=script)


def host_python_packages() -> list[FakePackage]:
    """A ``python`` package that runs the interpreter running the tests, as a venv does, and ``pip``.

    ``python`` holds ``pyvenv.cfg`` and ``bin/python`` -> the base interpreter, so the environment's
    ``sys.prefix`` is the environment itself; ``pip`` is the wheel bundled with ``ensurepip``,
    unpacked into site-packages. Together they let tests run the pip step of a conda environment
    for real, offline.
    """
    import ensurepip
    import sys
    import zipfile

    version = ".".join(str(v) for v in sys.version_info[:3])
    short = ".".join(str(v) for v in sys.version_info[:2])
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    cfg = f"home = {base.parent}\ninclude-system-site-packages = false\nversion = {version}\n"
    python = FakePackage(
        "python",
        version,
        build="h0_0_host",
        files={"pyvenv.cfg": cfg.encode(), f"lib/python{short}/site-packages/README.txt": b"site-packages\n"},
        symlinks={"bin/python": str(base), f"bin/python{short}": str(base)},
    )
    # CPython bundles pip's wheel with ensurepip; Debian and Ubuntu ship it in python3-pip-whl
    places = (Path(ensurepip.__file__).parent / "_bundled", Path("/usr/share/python-wheels"))
    bundled = sorted(wheel for place in places for wheel in place.glob("pip-*.whl"))[-1]
    pip_version = bundled.name.split("-")[1]
    site = f"lib/python{short}/site-packages/"
    with zipfile.ZipFile(bundled) as wheel:
        files = {site + name: wheel.read(name) for name in wheel.namelist() if not name.endswith("/")}
    pip = FakePackage("pip", pip_version, build="pyh0_0", depends=(f"python {short}.*",), files=files)
    return [python, pip]


def torch_build_channels(root: Path) -> dict[str, Path]:
    """``{"conda-forge": dir, "pytorch": dir}``: local channels with everything a torch 1.x env needs."""
    return {
        "conda-forge": make_channel(
            root / "conda-forge", [*conda_forge_packages(), *greet_packages(), slow_link_package()]
        ),
        "pytorch": make_channel(root / "pytorch", pytorch_packages()),
    }
