"""A PEP 517 build backend for the fixture extension (pypa/build's and pip's hooks).

``build_wheel`` imports the environment's torch (an extension compiles against it; the wheel
records its version), compiles ``tiny_ext/_tiny.c`` and the greet submodule's ``greet.c`` with
``$CC`` into one CPython extension, and writes the wheel with fixed timestamps, so the same
sources and compiler give the same bytes. ``build_sdist`` packs the tree for the package index.
"""

import base64
import hashlib
import io
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

NAME, VERSION = "tiny_ext", "1.0"
STAMP = (1980, 1, 1, 0, 0, 0)
SDIST_FILES = ("pyproject.toml", "tiny_backend.py", "tiny_ext/__init__.py", "tiny_ext/_tiny.c",
               "third_party/greet/greet.c", "third_party/greet/greet.h")


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def _tag():
    python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    return f"{python}-{python}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"


def _record(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    import torch

    library = f"{NAME}/_tiny{sysconfig.get_config_var('EXT_SUFFIX')}"
    argv = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-I", sysconfig.get_paths()["include"],
            "-I", "third_party/greet", "-o", library, f"{NAME}/_tiny.c", "third_party/greet/greet.c"]
    print("+ " + " ".join(argv), flush=True)
    subprocess.check_call(argv)
    dist = f"{NAME}-{VERSION}.dist-info"
    files = {name: _read(name) for name in (f"{NAME}/__init__.py", library)}
    files[f"{dist}/METADATA"] = (f"Metadata-Version: 2.1\nName: tiny-ext\nVersion: {VERSION}\n"
                                 f"Requires-Dist: torch=={torch.__version__}\n").encode()
    files[f"{dist}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: tiny_backend\nRoot-Is-Purelib: false\n"
                              f"Tag: {_tag()}\n").encode()
    record = [_record(name, data) for name, data in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{NAME}-{VERSION}-{_tag()}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, STAMP)
            info.external_attr = 0o644 << 16
            out.writestr(info, data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    top = f"tiny_ext-{VERSION}"
    name = f"{top}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as out:
        for path in SDIST_FILES:
            data = _read(path)
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            out.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(f"{top}/PKG-INFO")
        data = f"Metadata-Version: 2.1\nName: tiny-ext\nVersion: {VERSION}\n".encode()
        info.size, info.mtime, info.mode = len(data), 0, 0o644
        out.addfile(info, io.BytesIO(data))
    return name
