"""The internal steps only an extension build has: its preflight, verification and caching.

Frozen data like ``srcbuild.plan.actions``; what each does is ``srcbuild.ext.handlers``'s
(``EXT_HANDLERS``, which the extension build hands the executor).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from srcbuild.plan.actions import Action, SkipCondition
from srcbuild.records import record


@record
class ExtPreflight(Action):
    """Show the recipe's and the torch's findings; stop when they say the build cannot work."""

    name: ClassVar[str] = "ext-preflight"
    what: str
    ignore: bool

    def describe(self) -> str:
        text = f"check that {self.what} agree"
        return text + (" (--ignore-preflight: errors are reported, the build goes on)" if self.ignore else "")

    def args(self) -> dict[str, str]:
        return {"ignore": "1" if self.ignore else ""}



@record
class FetchTorchWheel(Action):
    """Download the torch wheel ``--torch VERSION`` names (the file the index page lists for this
    platform and ``python``) into ``into``, checked against the page's sha256; then read it."""

    name: ClassVar[str] = "fetch-torch-wheel"
    version: str  # as asked for: "2.0.1", "2.13.0+cpu"
    python: str  # the Python it is for ("3.11")
    filename: str
    url: str
    sha256: str  # as the index page states it; "" when it states none (the file is then not checked)
    into: Path

    @property
    def wheel(self) -> Path:
        return self.into / self.filename

    def describe(self) -> str:
        check = f"check its sha256 {self.sha256}" if self.sha256 else "the index states no sha256 to check"
        return (f"download {self.url} into {self.into} with pip ({check}; kept when already there), then read "
                "its torch version, CUDA version and kernels for the preflight")

    def args(self) -> dict[str, str]:
        return {"url": self.url, "sha256": self.sha256, "into": str(self.into)}

    def shell(self) -> tuple[str, ...]:
        digits = self.python.replace(".", "")
        fetch = (f"PIP_CONSTRAINT=/dev/null python3 -m pip download --no-deps --only-binary=:all: -d {self.into} "
                 f"--python-version {self.python} --implementation cp --abi cp{digits} {self.url}")
        return (fetch, f"echo '{self.sha256}  {self.wheel}' | sha256sum -c -") if self.sha256 else (fetch,)


@record
class VerifyExtWheel(Action):
    name: ClassVar[str] = "verify-ext-wheel"
    dist: Path
    pattern: str
    archs: tuple[str, ...]

    def describe(self) -> str:
        if not self.archs:
            return f"check {self.pattern} is a readable wheel (a CPU build: no kernels asked for)"
        return f"check {self.pattern} holds kernels for {', '.join(self.archs)} in its libraries"

    def args(self) -> dict[str, str]:
        return {"dist": str(self.dist), "pattern": self.pattern, "archs": ",".join(self.archs)}

    def shell(self) -> tuple[str, ...]:
        archs = " ".join(f"--arch {a}" for a in self.archs)
        return (f"srcbuild verify {self.dist}/{self.pattern} {archs}".rstrip(),)



@record
class CacheExtWheel(Action):
    name: ClassVar[str] = "cache-ext-wheel"
    dist: Path
    pattern: str
    cache_dir: Path

    def describe(self) -> str:
        return f"store {self.pattern} in {self.cache_dir}, keyed by its source, the torch wheel and the toolchain"

    def args(self) -> dict[str, str]:
        return {"dist": str(self.dist), "pattern": self.pattern, "cache_dir": str(self.cache_dir)}



@record
class TorchWheelInstalled(SkipCondition):
    """The build environment already holds this torch wheel: the sha256 srcbuild recorded when it
    installed it matches, and the environment's torch is still that version."""

    name: ClassVar[str] = "torch-wheel-installed"
    reason: ClassVar[str] = "the build environment already holds this torch wheel (same sha256 and version)"
    python: Path
    marker: Path
    sha256: str
    version: str


@record
class CheckExtCommit(Action):
    """The extension's git checkout is at the commit asked for or, for a tag, at the commit the tag
    named when first seen here (recorded in ``record``; ``accept_moved``: record a new one)."""

    name: ClassVar[str] = "check-ext-commit"
    source: Path
    url: str
    ref: str
    fetched_from: str
    record: Path
    accept_moved: bool = False

    def describe(self) -> str:
        return f"check {self.ref} of {self.url} is the commit it named when first seen here ({self.record})"

    def args(self) -> dict[str, str]:
        return {"source": str(self.source), "url": self.url, "ref": self.ref, "record": str(self.record)}

