"""Does a wheel match the settings of the fingerprint it is stored under?

A store refuses a wheel that contradicts its own manifest's key inputs, so a wheel built from
other settings (another recipe sharing a build tree, a hand-copied file) never sits under the
wrong fingerprint. Checked, from the file name and at most one small member:

* the distribution name is the key's package (``torch``/``torchvision``);
* the release (``1.7.1`` of ``1.7.1+cu92.sm30``) is the release of the pinned tag (``v1.7.1``):
  the builder sets ``PYTORCH_BUILD_VERSION``/``BUILD_VERSION`` from the tag;
* a ``cpXY`` wheel is for the key's Python ABI;
* ``<package>/version.py``, when the wheel has one (torch and torchvision write it), names the
  key's CUDA release (``cuda = '9.2'``, ``None`` for a CPU build) and, when it records one, the
  manifest's source commit (``git_version``).

The member is read through ``limits.read_member`` (bounded, zip-bomb and CRC checked).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from srcbuild.cache.manifest import Manifest
from srcbuild.errors import CacheIntegrityError
from srcbuild.limits import MAX_VERSION_PY, read_member

_CUDA = re.compile(r"^cuda\s*(?::\s*\S+\s*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", re.MULTILINE)
_GIT = re.compile(r"^git_version\s*(?::\s*\S+\s*)?=\s*['\"]([0-9a-f]{7,40})['\"]", re.MULTILINE)


def _release(text: str) -> tuple[int, ...] | None:
    try:
        return Version(text.lstrip("vV")).release
    except InvalidVersion:
        return None


def _cuda_release(text: str | None) -> tuple[int, ...] | None:
    return _release(text) if text else None


def mismatches(wheel: Path, manifest: Manifest) -> list[str]:
    """Every way ``wheel`` contradicts the settings in ``manifest`` (empty: it matches)."""
    inputs = manifest.key_inputs
    problems: list[str] = []
    try:
        name, version, _build, tags = parse_wheel_filename(manifest.wheel)
    except InvalidWheelFilename as exc:
        return [f"{manifest.wheel} is not a wheel file name ({exc})"]
    package = inputs.get("package")
    if isinstance(package, str) and canonicalize_name(package) != name:
        problems.append(f"it is a {name} wheel, the fingerprint is for {package}")
    source = inputs.get("source")
    tag = source.get("tag") if isinstance(source, dict) else None
    if isinstance(tag, str) and _release(tag) is not None and version.release != _release(tag):
        problems.append(f"its version {version} is not the release of tag {tag}")
    abi = inputs.get("python_abi")
    cp_tags = {t.interpreter for t in tags if t.interpreter.startswith("cp")}
    if isinstance(abi, str) and cp_tags and abi not in cp_tags:
        problems.append(f"it is for {', '.join(sorted(cp_tags))}, the fingerprint for {abi}")
    problems.extend(_version_py_mismatches(wheel, manifest, str(name)))
    return problems


def _version_py_mismatches(wheel: Path, manifest: Manifest, name: str) -> list[str]:
    member = f"{name.replace('-', '_')}/version.py"
    try:
        with zipfile.ZipFile(wheel) as zf:
            try:
                info = zf.getinfo(member)
            except KeyError:
                return []
            text = read_member(zf, info, manifest.wheel, MAX_VERSION_PY).decode("utf-8", errors="replace")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return [f"it is not a readable zip archive ({exc})"]
    problems = []
    m = _CUDA.search(text)
    if m is not None:
        built = m.group(1) or m.group(2) or None
        wanted = manifest.key_inputs.get("cuda")
        if _cuda_release(built) != _cuda_release(str(wanted) if wanted else None):
            problems.append(f"{member} says cuda {built!r}, the fingerprint says {wanted!r}")
    g = _GIT.search(text)
    commit = manifest.resolved.get("source_commit")
    if g is not None and isinstance(commit, str) and commit and not commit.startswith(g.group(1)):
        problems.append(f"{member} says git_version {g.group(1)}, the manifest says commit {commit}")
    return problems


def check_settings(wheel: Path, manifest: Manifest) -> None:
    """Raise CacheIntegrityError when ``wheel`` was not built with ``manifest``'s settings."""
    problems = mismatches(wheel, manifest)
    if problems:
        raise CacheIntegrityError(
            f"{manifest.wheel} does not match the settings of fingerprint {manifest.fingerprint[:12]}: "
            + "; ".join(problems),
            f"it was not stored; build it again with `srcbuild {manifest.package} --recipe {manifest.recipe_name}`",
        )
