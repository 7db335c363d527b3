"""Small synthetic wheels and manifests for the cache tests (a zip with a dist-info and a file)."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import sysconfig
import zipfile
from collections.abc import Sequence
from pathlib import Path

from srcbuild.cache.key import ResolvedFacts
from srcbuild.cache.manifest import Manifest
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.resolve.key import key_inputs
from srcbuild.resolve.resolver import resolve_unprobed

PLATFORM = "linux_x86_64"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(
    directory: Path,
    name: str = "torch",
    version: str = "1.7.1",
    tag: str = "cp38-cp38-linux_x86_64",
    payload: bytes = b"kernels go here\n",
    extra: dict[str, bytes] | None = None,
    requires: Sequence[str] = (),
) -> Path:
    """Write ``<name>-<version>-<tag>.whl``: a package with one module (and ``extra`` members), valid for pip."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f'__version__ = "{version}"\n'.encode(),
        f"{name}/_C.so": payload,
        **(extra or {}),
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires)
        ).encode(),
        f"{dist_info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: srcbuild-tests\nRoot-Is-Purelib: false\nTag: {tag}\n"
        ).encode(),
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = directory / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in files.items():
            # a fixed date: the same arguments make the same bytes, whichever second it is (two
            # machines that built the same entry hold the same wheel)
            info = zipfile.ZipInfo(member, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o600 << 16  # what writestr gives a member named by a string
            zf.writestr(info, data, zipfile.ZIP_DEFLATED)
    return path


def catalog_recipe(name: str = "kepler-cu92") -> Recipe:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load(name)


def host_python_recipe(directory: Path, base: str = "kepler-cu92") -> Path:
    """A recipe file like ``base`` but for the Python running the tests (so pip can install its wheel)."""
    text = (Paths.resolve(environ=os.environ).recipe_dirs[-1] / f"{base}.toml").read_text()
    lines = []
    for line in text.splitlines():
        if line.startswith("python = "):
            line = f'python = "{sys.version_info[0]}.{sys.version_info[1]}"'
        if line.startswith("name = "):
            line = f'name = "{base}-host"'
        lines.append(line)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base}-host.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def host_tag() -> str:
    """The wheel tag of the running interpreter on this machine: ``cp311-cp311-linux_x86_64``."""
    cp = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    return f"{cp}-{cp}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"


def make_manifest(
    wheel: Path,
    recipe: Recipe | None = None,
    sass: Sequence[int] = (30,),
    ptx: Sequence[int] = (),
    package: str = "torch",
    commit: str = "a" * 40,
    platform: str | None = PLATFORM,
    created: float | None = None,
) -> Manifest:
    """A manifest as the builder writes it (``platform=None``: this machine's platform tag)."""
    recipe = recipe or catalog_recipe()
    inputs = key_inputs(resolve_unprobed(recipe, package, platform))
    resolved = ResolvedFacts.create(
        source_commit=commit,
        submodule_commits={"third_party/pybind11": "b" * 40},
        gcc_version="7.5.0",
        nvcc_version="9.2.148",
        arch=[f"{s // 10}.{s % 10}" for s in sass],
    )
    return Manifest.create(
        wheel,
        inputs,
        resolved,
        recipe=recipe.to_json(),
        toolchain={"gcc": "7.5.0", "nvcc": "9.2.148"},
        sass=sass,
        ptx=ptx,
        local_version=recipe.local_version(),
        created=created,
    )
