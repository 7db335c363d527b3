"""A wheel srcbuild did not build, brought into the cache (``srcbuild cache add``).

A wheel built by hand or downloaded from a community builder is measured as any build's is (its
SASS and PTX per library, ``srcbuild.verify``), refused unless it runs on every GPU it is added
for (a recipe's ``gpu.arch``, or ``--arch``), and stored with its provenance in the manifest's
``extra["provenance"]`` (how it came: built by hand, or the URL it was downloaded from; the recipe
or capabilities it was checked against; when), which the signature of a push covers.

Its key is honest: the fingerprint is the hash of ``{"origin": "added", "wheel_sha256": ...,
"package", "recipe", "arch", "cuda"}``, never a recipe's build fingerprint, so ``srcbuild
install --recipe R`` and a build's lookup never take it for srcbuild's build of R. It is listed,
shown, verified, pushed, signed and pulled as any entry.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from srcbuild.cache.key import canonical_json
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import CacheEntry, WheelCache
from srcbuild.capability import ComputeCapability
from srcbuild.errors import UsageError, VerificationFailed
from srcbuild.files import sha256_file
from srcbuild.recipe import Recipe
from srcbuild.verify.kernels import coverage, sm_text
from srcbuild.verify.wheel import measure_wheel


def added_inputs(
    package: str, sha256: str, recipe: Recipe | None, arch: Sequence[ComputeCapability], cuda: str | None
) -> dict[str, Any]:
    """The key inputs of an added wheel: its own bytes, and what it was checked against."""
    return {
        "origin": "added",
        "package": package,
        "wheel_sha256": sha256,
        "recipe": recipe.name if recipe is not None else None,
        "arch": [str(cc) for cc in arch],
        "cuda": cuda,
    }


def add_wheel(
    cache: WheelCache,
    wheel: Path,
    recipe: Recipe | None,
    arch: Sequence[ComputeCapability],
    source: str | None,
) -> CacheEntry:
    """Measure ``wheel``, check it runs on ``arch`` (the recipe's when a recipe is given), and store
    it with its provenance; VerificationFailed names the capabilities it does not run on."""
    if not wheel.is_file():
        raise UsageError(f"{wheel}: no such wheel file", "pass the path of a .whl file")
    try:
        name, version, _build, _tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        raise UsageError(f"{wheel.name} is not a wheel file name ({exc})", "pass a .whl file as pip names it") from None
    wanted = tuple(recipe.gpu.arch) if recipe is not None else tuple(arch)
    if not wanted:
        raise UsageError(
            "cache add needs the GPUs the wheel is for: --recipe R (its gpu.arch) or --arch X.Y",
            "e.g. srcbuild cache add WHEEL --recipe kepler-k80-cu118, or --arch 3.7",
        )
    report = measure_wheel(wheel)
    kernels = report.kernels
    missing = [cc for cc in wanted if not coverage(kernels, cc).runs]
    if missing:
        held = f"SASS {sm_text(kernels.sass)}" if kernels.sass else "no SASS"
        ptx = f", PTX {sm_text(kernels.ptx)}" if kernels.ptx else ""
        raise VerificationFailed(
            f"{wheel.name} does not run on compute capability {', '.join(str(cc) for cc in missing)} "
            f"(it holds {held}{ptx}); it was not added",
            "add it for the GPUs it has kernels for (--arch), or use a wheel built for these",
        )
    sha256 = sha256_file(wheel)
    cuda = report.cuda_version_py or None
    inputs = added_inputs(str(name), sha256, recipe, wanted, cuda)
    provenance = {
        "how": "downloaded" if source and "://" in source else "built by hand" if not source else "copied",
        "source": source or "",
        "checked_for": {"recipe": recipe.name if recipe is not None else None, "arch": inputs["arch"]},
        "added": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    manifest = Manifest(
        package=str(name),
        version=str(version),
        wheel=wheel.name,
        sha256=sha256,
        fingerprint=hashlib.sha256(canonical_json(inputs)).hexdigest(),
        key_inputs=inputs,
        resolved={"arch": inputs["arch"]},
        recipe={},  # not a build of any recipe: the one it was checked for is in the provenance
        toolchain={},
        sass=tuple(sorted(kernels.sass)),
        ptx=tuple(sorted(kernels.ptx)),
        size=wheel.stat().st_size,
        created=time.time(),
        extra={"provenance": provenance},
    )
    return cache.store(wheel, manifest)
