"""The complete-home contract: which headers and libraries a CUDA home needs for a torch build.

``srcbuild/knowledge/data/cuda_components.toml`` lists, per component (cccl, cublas, cusparse ...),
the headers in ``include/``, the libraries and the files (static runtime, driver stub) a torch
build needs, the CUDA releases the row
applies to, and the torch file that fails without it. ``components_for("11.8")`` gives the rows of
one release; the probe checks a home against them (``srcbuild.host.toolchain.missing_components``).
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE = Path(__file__).resolve().parent / "data" / "cuda_components.toml"


@record
class Component:
    """One piece of a complete CUDA home."""

    name: str
    headers: tuple[str, ...]  # relative to include/; "a|b" is met by either
    libraries: tuple[str, ...]  # linker names: "cublas" is libcublas.so
    files: tuple[str, ...]  # below a library directory: "libcudadevrt.a", "stubs/libcuda.so"
    cuda: str  # a specifier on the CUDA release ("<12"), "" for every release
    needed_by: str
    source: str

    def applies_to(self, release: str) -> bool:
        if not self.cuda:
            return True
        try:
            return Version(release) in SpecifierSet(self.cuda)
        except (InvalidVersion, InvalidSpecifier):
            return True


@lru_cache(maxsize=1)
def load_components() -> tuple[Component, ...]:
    data = tomllib.loads(FILE.read_text(encoding="utf-8"))
    return tuple(
        Component(
            name=str(row["name"]),
            headers=tuple(str(h) for h in row.get("headers", ())),
            libraries=tuple(str(lib) for lib in row.get("libraries", ())),
            files=tuple(str(f) for f in row.get("files", ())),
            cuda=str(row.get("cuda", "")),
            needed_by=str(row["needed_by"]),
            source=str(row.get("source", "")),
        )
        for row in data.get("component", [])
    )


def components_for(version: str) -> tuple[Component, ...]:
    """The components a home of CUDA ``version`` ("11.8.89" or "11.8") must hold."""
    release = ".".join(version.split(".")[:2])
    return tuple(c for c in load_components() if c.applies_to(release))
