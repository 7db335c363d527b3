"""Which era of the build facts a release falls in, and the package rows that era sets.

``resolve.variables`` builds every variable of a build; ``resolve.request`` (a cache lookup's
fingerprint) needs only the ``[[package_variable]]`` rows of ``srcbuild/knowledge/data/build.toml``,
so both read them here, without the lookup importing the variable builder.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from srcbuild.knowledge.build_facts import PackageVariable, load_build_facts
from srcbuild.packages import PackageSpec, version_of_tag
from srcbuild.recipe import Recipe


def release_era(version: str) -> Version:
    """``version`` as the era rows compare it; one that does not parse reads as 2.0."""
    try:
        return Version(version)
    except InvalidVersion:
        return Version("2.0")


def package_rows(spec: PackageSpec, recipe: Recipe) -> tuple[PackageVariable, ...]:
    """The ``[[package_variable]]`` rows a build of the recipe's release of ``spec`` sets (none for torch)."""
    if not spec.needs_torch_wheel:
        return ()
    return load_build_facts().variables_of(spec.name, release_era(version_of_tag(spec.pin(recipe).tag)))
