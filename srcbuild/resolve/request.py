"""What a cache lookup keys on, without resolving the build: the fingerprint inputs of a request.

``srcbuild install`` and ``cache pull --recipe`` look a wheel up by the fingerprint a build of the
same recipe stores it under (``cache.key``). That fingerprint counts the recipe's pins, its
patches (by content), its ``[build] env``, its toolchain pins and the platform, the build variables
the knowledge base adds for old tags (``KnowledgeBase.build_pins``) and a portable build's sysroot.
Nothing else a resolve decides (the compiler tree, the environment backend, the toolchains and
their provisioning, the rules, the paths) reaches it: every other build variable is a path, a
parallelism or launcher setting, or a function of a field already hashed, which the key leaves out
(``cache.key.IGNORED_BUILD_VARS``). So ``request_inputs`` reads those few things and imports none
of the resolver: ``key_inputs(resolve_unprobed(...))`` gives the same answer for every recipe of the
catalog, portable or not (tests/unit/resolve/test_request_key.py holds the two together).
"""

from __future__ import annotations

from collections.abc import Mapping

from srcbuild.cache.key import FingerprintInputs, fingerprint
from srcbuild.packages import package_spec, version_of_tag
from srcbuild.recipe import Recipe
from srcbuild.resolve.portable import recipe_sysroot


def request_inputs(
    recipe: Recipe, package: str, environ: Mapping[str, str], platform_tag: str | None = None
) -> FingerprintInputs:
    """The fingerprint inputs a build of ``package`` for ``recipe`` stores its wheel under. Of
    ``environ`` (the command's environment) only what says whether the build is portable and where
    the toolchain data lies counts (``resolver.KEYED_VARS``), as for ``resolve_unprobed``."""
    from srcbuild.knowledge.base import build_pins  # breakages.toml alone, not the whole knowledge base
    from srcbuild.resolve.eras import package_rows

    spec = package_spec(package)
    spec.pin(recipe)  # a recipe without this package's pin is refused here, as by a build
    variables = dict(build_pins(version_of_tag(recipe.torch.tag)).env)  # rows keyed on torch's release, as the build's
    if recipe.toolchain.cuda is not None and spec.needs_torch_wheel:
        variables.update(spec.cuda_variables)  # as the build sets them (FORCE_CUDA, USE_CUDA: not keyed)
    variables.update((row.name, row.value) for row in package_rows(spec, recipe))  # torchaudio's BUILD_SOX=0
    variables.update(recipe.build.env)  # the recipe's own values come last there too
    return FingerprintInputs.from_recipe(
        recipe, package, variables, platform_tag, sysroot=recipe_sysroot(recipe, environ)
    )


def request_fingerprint(
    recipe: Recipe, package: str, environ: Mapping[str, str], platform_tag: str | None = None
) -> str:
    """The request fingerprint of ``request_inputs`` (what ``resolve.key.build_fingerprint`` gives a build)."""
    return fingerprint(request_inputs(recipe, package, environ, platform_tag))
