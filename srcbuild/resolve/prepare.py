"""``resolve_on_host``: probe this machine for a build, then resolve it, in one call.

The probe mostly waits for programs (nvcc, gcc, mpicc), so it runs in a thread while this one
loads the knowledge base and runs the caller's ``meanwhile``. The build's orchestrator
(``srcbuild.pipeline``) and the extension build (``srcbuild.ext.run``) both start here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve.inputs import BuildOptions
from srcbuild.resolve.model import ResolvedBuild
from srcbuild.resolve.probe import probe_build_host
from srcbuild.resolve.resolver import resolve


def resolve_on_host(
    recipe: Recipe,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
    meanwhile: Callable[[], None] | None = None,
) -> ResolvedBuild:
    """Probe the host for a build of ``options.package`` for ``recipe`` and resolve it."""
    from srcbuild.knowledge import load_knowledge

    def alongside() -> None:
        load_knowledge()
        if meanwhile is not None:
            meanwhile()

    host = probe_build_host(recipe, options, paths, environ, meanwhile=alongside)
    return resolve(recipe, options, host, load_knowledge(), paths=paths, environ=environ)
