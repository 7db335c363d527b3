"""The manifest stored beside each cached wheel (``manifest.json``): what it is and how it was made.

A manifest names the wheel (file name, sha256, package, version, local version label), both
halves of its cache key (the fingerprint inputs and the facts resolved at build time), the
resolved recipe, the toolchain versions measured during the build and the kernels measured in
the binary: SASS per SM and PTX. It is plain JSON so any machine (or a person) can read it.

An entry built from a checkout with local modifications (``srcbuild.sources.localdiff``) records
them under ``modified`` (the hash of the differences and the changed files) and carries the hash
in its resolved facts as ``extra.source_diff``, so it has its own entry key and can never be
taken for the clean build of the same tag. ``Manifest.modified`` is true when either says so.

A portable build's entry records ``portable``: the sysroot glibc it was built against and the
``manylinux_X_Y`` platform tag its wheel was given (its fingerprint has ``sysroot`` too, see
``srcbuild.cache.key``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from srcbuild import __version__
from srcbuild.cache.key import FingerprintInputs, ResolvedFacts, entry_key, fingerprint
from srcbuild.errors import CacheIntegrityError, UsageError
from srcbuild.files import sha256_file
from srcbuild.limits import MAX_MANIFEST, check_hex64, open_regular, safe_file_name
from srcbuild.records import record

MANIFEST_NAME = "manifest.json"
LOG_NAME = "build.log"
MANIFEST_FORMAT = 1


def check_wheel_name(name: object, where: str) -> str:
    """``name`` when it is a valid wheel file name and nothing else: never a path (see ``limits``)."""
    name = safe_file_name(name, "wheel", where)
    try:
        parse_wheel_filename(name)
    except InvalidWheelFilename as exc:
        raise CacheIntegrityError(
            f"{where}: wheel {name!r} is not a wheel file name ({exc})", "the manifest is damaged; it is not used"
        ) from None
    return name


def wheel_name_parts(filename: str) -> tuple[str, str]:
    """``torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl`` -> ("torch", "1.7.1+cu92.sm30")."""
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise UsageError(
            f"{filename} is not a wheel file name: {exc}", "pass the .whl file that bdist_wheel wrote"
        ) from None
    return str(name), str(version)


def _glibc(value: Any) -> str:
    """A ``glibc_needed`` value read from outside: empty or ``X.Y``."""
    if not value:
        return ""
    text = str(value)
    major, _, minor = text.partition(".")
    if not (major.isdigit() and minor.isdigit() and len(text) <= 10):
        raise ValueError(f"glibc_needed {text[:20]!r} is not a version like 2.17")
    return text


def _changes(data: Any) -> dict[str, Any]:
    """The ``modified`` object of a manifest read from outside, checked for shape."""
    if not data:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("files", []), list):
        raise ValueError("modified is not an object with a list of files")
    return {"diff_sha256": str(data.get("diff_sha256") or ""), "files": [str(f) for f in data.get("files") or []]}


def _portable(data: Any) -> dict[str, str]:
    """The ``portable`` object of a manifest read from outside: the sysroot glibc and the tag."""
    if not data:
        return {}
    if not isinstance(data, dict):
        raise ValueError("portable is not an object")
    tag = str(data.get("platform_tag") or "")
    if len(tag) > 200 or not all(c.isalnum() or c in "_." for c in tag):
        raise ValueError(f"portable.platform_tag {tag[:40]!r} is not a wheel platform tag")
    return {"sysroot_glibc": _glibc(data.get("sysroot_glibc")), "platform_tag": tag}


@record
class Manifest:
    """One cache entry's description (see the module docstring)."""

    package: str
    version: str
    wheel: str  # file name
    sha256: str
    fingerprint: str
    key_inputs: Mapping[str, Any]  # FingerprintInputs.to_json()
    resolved: Mapping[str, Any]  # ResolvedFacts.to_json()
    recipe: Mapping[str, Any]  # Recipe.to_json()
    toolchain: Mapping[str, str]  # measured versions: gcc, nvcc, cudnn, mpi, python
    sass: tuple[int, ...]  # SM numbers with SASS in the binary (30, 35)
    ptx: tuple[int, ...]  # SM numbers with PTX in the binary
    local_version: str = ""  # the recipe's label, cu92.sm30.mpi
    size: int = 0
    created: float = 0.0  # seconds since the epoch
    srcbuild_version: str = __version__
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. the sha256 of the original wheel
    changes: Mapping[str, Any] = field(default_factory=dict)  # LocalChanges.to_json() when modified
    glibc_needed: str = ""  # "2.17": the newest GLIBC_ symbol version its ELF files ask for
    portable: Mapping[str, str] = field(default_factory=dict)  # {"sysroot_glibc", "platform_tag"}; {}: not portable

    @classmethod
    def create(
        cls,
        wheel: Path,
        inputs: FingerprintInputs,
        resolved: ResolvedFacts,
        recipe: Mapping[str, Any],
        toolchain: Mapping[str, str],
        sass: Sequence[int],
        ptx: Sequence[int] = (),
        local_version: str = "",
        created: float | None = None,
        changes: Mapping[str, Any] | None = None,
        glibc_needed: str = "",
        portable: Mapping[str, str] | None = None,
    ) -> Manifest:
        """Describe ``wheel`` (hashing it) as built from ``inputs`` with the measured ``resolved`` facts."""
        package, version = wheel_name_parts(wheel.name)
        return cls(
            package=package,
            version=version,
            wheel=wheel.name,
            sha256=sha256_file(wheel),
            fingerprint=fingerprint(inputs),
            key_inputs=inputs.to_json(),
            resolved=resolved.to_json(),
            recipe=dict(recipe),
            toolchain=dict(toolchain),
            sass=tuple(sorted(set(sass))),
            ptx=tuple(sorted(set(ptx))),
            local_version=local_version,
            size=wheel.stat().st_size,
            created=time.time() if created is None else created,
            changes=dict(changes or {}),
            glibc_needed=glibc_needed,
            portable=dict(portable or {}),
        )

    @property
    def entry_key(self) -> str:
        return entry_key(self.fingerprint, ResolvedFacts.from_json(self.resolved))

    @property
    def modified(self) -> bool:
        """Built from sources with local modifications (recorded either way, see the docstring)."""
        return bool(self.changes.get("files")) or bool(dict(self.resolved.get("extra") or {}).get("source_diff"))

    @property
    def changed_files(self) -> tuple[str, ...]:
        return tuple(str(f) for f in self.changes.get("files") or ())

    @property
    def recipe_name(self) -> str:
        return str(self.recipe.get("name") or "-")

    @property
    def kernels(self) -> Any:
        """The measured kernels as the verification package's ``Kernels`` value."""
        from srcbuild.verify.kernels import Kernels

        return Kernels(sass=frozenset(self.sass), ptx=frozenset(self.ptx))

    def with_wheel(self, filename: str, sha256: str, size: int, **extra: Any) -> Manifest:
        """The same entry served under another file (a re-labelled copy in an index)."""
        return replace(self, wheel=filename, sha256=sha256, size=size, extra={**self.extra, **extra})

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": MANIFEST_FORMAT,
            "package": self.package,
            "version": self.version,
            "local_version": self.local_version,
            "wheel": self.wheel,
            "sha256": self.sha256,
            "size": self.size,
            "fingerprint": self.fingerprint,
            "entry_key": self.entry_key,
            "key_inputs": dict(self.key_inputs),
            "resolved": dict(self.resolved),
            "recipe": dict(self.recipe),
            "toolchain": dict(self.toolchain),
            "kernels": {"sass": list(self.sass), "ptx": list(self.ptx)},
            "created": self.created,
            "srcbuild_version": self.srcbuild_version,
            "extra": dict(self.extra),
        }
        if self.glibc_needed:
            data["glibc_needed"] = self.glibc_needed
        if self.portable:
            data["portable"] = dict(self.portable)
        if self.modified:
            data["modified"] = {"diff_sha256": "", "files": [], **self.changes}
        return data

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "manifest") -> Manifest:
        """Read a manifest from outside: every name that becomes a path or a key is checked first."""
        try:
            kernels = data.get("kernels") or {}
            size = data.get("size") or 0
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ValueError(f"size {size!r} is not a byte count")
            manifest = cls(
                package=str(data["package"]),
                version=str(data["version"]),
                wheel=check_wheel_name(data["wheel"], where),
                sha256=check_hex64(data["sha256"], "sha256", where),
                fingerprint=check_hex64(data["fingerprint"], "fingerprint", where),
                key_inputs=dict(data.get("key_inputs") or {}),
                resolved=dict(data.get("resolved") or {}),
                recipe=dict(data.get("recipe") or {}),
                toolchain={str(k): str(v) for k, v in (data.get("toolchain") or {}).items()},
                sass=tuple(int(s) for s in kernels.get("sass", ())),
                ptx=tuple(int(s) for s in kernels.get("ptx", ())),
                local_version=str(data.get("local_version") or ""),
                size=size,
                created=float(data.get("created") or 0.0),
                srcbuild_version=str(data.get("srcbuild_version") or ""),
                extra=dict(data.get("extra") or {}),
                changes=_changes(data.get("modified")),
                glibc_needed=_glibc(data.get("glibc_needed")),
                portable=_portable(data.get("portable")),
            )
            computed = manifest.entry_key
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
            raise CacheIntegrityError(
                f"{where}: not a srcbuild cache manifest ({type(exc).__name__}: {exc})",
                "remove the entry with `srcbuild cache verify --remove`",
            ) from None
        recorded = data.get("entry_key")
        if recorded is not None and recorded != computed:
            raise CacheIntegrityError(
                f"{where}: entry_key {str(recorded)[:80]} does not match its resolved facts ({computed})",
                "the manifest was edited or damaged; remove the entry with `srcbuild cache verify --remove`",
            )
        return manifest

    @classmethod
    def loads(cls, text: str | bytes, where: str = "manifest") -> Manifest:
        """Parse manifest text (bytes must be UTF-8); anything else is CacheIntegrityError."""
        if len(text) > MAX_MANIFEST:
            raise CacheIntegrityError(f"{where}: larger than {MAX_MANIFEST} bytes", "it is not a srcbuild manifest")
        try:
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            data = json.loads(text)
        except UnicodeDecodeError:
            raise CacheIntegrityError(f"{where}: not UTF-8 text", "it is not a srcbuild manifest") from None
        except RecursionError:
            raise CacheIntegrityError(f"{where}: JSON nested too deep", "it is not a srcbuild manifest") from None
        except (json.JSONDecodeError, ValueError) as exc:
            raise CacheIntegrityError(
                f"{where}: unreadable JSON ({exc})", "remove the entry with `srcbuild cache verify --remove`"
            ) from None
        if not isinstance(data, dict):
            raise CacheIntegrityError(f"{where}: not a JSON object", "remove the entry")
        return cls.from_json(data, where)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        try:
            with open_regular(path) as handle:
                text = handle.read(MAX_MANIFEST + 1)
        except OSError as exc:
            raise CacheIntegrityError(f"{path}: cannot read ({exc.strerror})", "check the cache directory") from None
        return cls.loads(text, str(path))
