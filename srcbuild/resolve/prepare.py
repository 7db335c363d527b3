"""``resolve_on_host``: decide the settings, probe this machine, plan provisioning, resolve.

The settings are decided first (``srcbuild.resolve.decide``: default < recipe < config file <
environment < command line), so the probe reads them instead of deciding them again; provisioning
is planned from the probe's answer (``srcbuild.resolve.provisioning``); ``resolve`` gets both.

The probe mostly waits for programs (nvcc, gcc, mpicc), so it runs in a thread while this one
loads the knowledge base and runs the caller's ``meanwhile``. The build's orchestrator
(``srcbuild.pipeline``) and the extension build (``srcbuild.ext.run``) both start here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve.decide import decide
from srcbuild.resolve.inputs import BuildOptions
from srcbuild.resolve.model import ResolvedBuild
from srcbuild.resolve.probe import probe_build_host
from srcbuild.resolve.provisioning import with_provisioning
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

    decided = decide(recipe, options, environ)  # every setting, before anything looks at the host
    probed = probe_build_host(recipe, decided, paths, environ, meanwhile=alongside)
    host = with_provisioning(recipe, options, decided, probed, paths, environ)
    return resolve(recipe, options, host, load_knowledge(), paths=paths, environ=environ, decided=decided)
