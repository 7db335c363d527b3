"""The cache key of a resolved build, from the ``ResolvedBuild`` alone.

``key_inputs`` reads what resolve decided (the package's pin, the sha256 of each patch that
changes this package's wheel, the build variables, the toolchain pins, the platform, a portable
build's sysroot) and re-derives nothing; ``srcbuild.cache.key`` owns the key's format and hash
(``FingerprintInputs``, ``fingerprint``: the contract its docstring states). A build, ``install``,
``cache pull --recipe`` and ``verify --recipe`` all key through ``build_fingerprint`` (the latter
three resolve without probing the host, which changes nothing the key counts but the platform).
"""

from __future__ import annotations

from srcbuild.cache.key import FingerprintInputs, fingerprint
from srcbuild.resolve.model import ResolvedBuild


def key_inputs(resolved: ResolvedBuild) -> FingerprintInputs:
    """The fingerprint inputs of ``resolved``."""
    spec = resolved.package
    return FingerprintInputs.create(
        resolved.recipe,
        package=spec.name,
        pin=resolved.pin,
        against=resolved.recipe.torch if spec.needs_torch_wheel else None,
        patches=tuple((p.name, p.sha256) for p in resolved.patches if spec.counts_patch(p.name)),
        build_env=resolved.env_changes.final_values(),
        platform=resolved.platform,
        sysroot=resolved.portable.glibc if resolved.portable is not None else None,
    )


def build_fingerprint(resolved: ResolvedBuild) -> str:
    """The request fingerprint of a resolved build."""
    return fingerprint(key_inputs(resolved))
