"""The build environment of a resolved build: an existing one (``--env``) or a backend and a spec.

The backend is chosen from the probed host (``BuildHost.conda_tools``, ``BuildHost.rattler``) by
``srcbuild.envs.backends.pick_backend``: nothing is looked up on PATH and nothing optional is
imported here. When no backend can make the environment on this host, the decision records why;
the plan shows it and the build stops at its environment step with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from srcbuild.envs import default_lockfile, env_prefix
from srcbuild.envs.backends import pick_backend
from srcbuild.envs.backends.conda_family import CondaFamilyBackend
from srcbuild.envs.backends.venv_backend import VenvBackend
from srcbuild.envs.spec import env_spec_for
from srcbuild.errors import HostError
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve.inputs import BuildHost
from srcbuild.resolve.model import ResolvedEnv
from srcbuild.resolve.settings import ResolvedSettings


def env_link(paths: Paths, recipe: Recipe) -> Path:
    """The stable path a made environment is reached through (a link to its content-addressed prefix)."""
    return paths.envs_dir / f"{recipe.name}-py{recipe.toolchain.python}"


def resolve_environment(
    recipe: Recipe, settings: ResolvedSettings, host: BuildHost, paths: Paths, environ: Mapping[str, str]
) -> ResolvedEnv:
    python = recipe.toolchain.python
    if settings.env_prefix:
        prefix = Path(settings.env_prefix).expanduser().resolve()
        return ResolvedEnv(prefix=prefix, python=python, existing=True, source="command line --env")
    link = env_link(paths, recipe)
    spec = env_spec_for(recipe, environ=environ)
    lockfile = default_lockfile(recipe)  # recipes/R.conda-lock.yml: install exactly it, no solve
    source = settings.value("env_backend")
    try:
        backend = pick_backend(settings.env_backend, spec, dict(host.conda_tools), host.rattler)
    except HostError as exc:  # shown in the plan; the build stops at its environment step with these words
        return ResolvedEnv(
            prefix=link,
            python=python,
            existing=False,
            source=source,
            spec=spec,
            lockfile=lockfile,
            envs_dir=paths.envs_dir,
            error=(exc.message, exc.hint or ""),
        )
    create: tuple[tuple[str, ...], ...] = ()
    target = env_prefix(spec, paths.envs_dir, backend)
    if isinstance(backend, VenvBackend):  # the same commands, made in place of the stable link
        create = tuple(c.argv for c in backend.commands(spec, link))
        target = link
    elif isinstance(backend, CondaFamilyBackend) and lockfile is None:  # a lockfile needs srcbuild's explicit file
        create = tuple(c.argv for c in backend.commands(spec, target, None))
    return ResolvedEnv(
        prefix=link,
        python=python,
        existing=False,
        source=source,
        backend=backend.name,
        executable=getattr(backend, "executable", None),
        spec=spec,
        lockfile=lockfile,
        envs_dir=paths.envs_dir,
        description=tuple(backend.describe(spec, link, lockfile)),
        target=target,
        create_shell=create,
    )
