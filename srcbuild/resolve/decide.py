"""Each setting a build reads, decided once, before anything probes the host.

One precedence for every setting (``srcbuild.precedence``): default < recipe < config file <
environment < command line; each value here is a ``Chosen``: the value and its origin.

``decide`` runs before the probe (``srcbuild.resolve.prepare``): the probe looks at the CUDA home
decided here, asks an sccache-dist scheduler only when the compiler cache decided here can be
sccache, and provisioning plans a portable build's sysroot only when it was decided portable. The
host then fills in what was left to it (a CUDA home found by the probe, ``MAX_JOBS`` from memory
or the cluster's CPUs, the compiler cache found on PATH): ``srcbuild.resolve.settings``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from srcbuild.config import env_bool, origin
from srcbuild.errors import UsageError
from srcbuild.offline import DIR_VAR as MIRROR_DIR_VAR
from srcbuild.precedence import Chosen, env_value, from_cli, from_env, from_env_bool, precedence
from srcbuild.recipe import Recipe
from srcbuild.records import record
from srcbuild.resolve.inputs import BuildOptions
from srcbuild.resolve.portable import portable_setting


def _jobs(var: str) -> Callable[[str], int]:
    def read(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise UsageError(f"{var}={raw!r} is not a whole number", f"set {var} to a number of jobs, e.g. 4") from None
        if value < 1:
            raise UsageError(f"{var}={raw!r} must be at least 1", f"set {var} to a number of jobs, e.g. 4")
        return value

    return read


@record
class Decided:
    """The settings of one build that neither the host nor the probe decides (None: left to the host)."""

    cuda_home: Chosen[str | None]  # None: the probe finds the toolkit
    portable: Chosen[bool]
    compiler_cache: Chosen[str]  # "auto" (sccache, else ccache, when installed), sccache, ccache or none
    compiler_cache_url: Chosen[str | None]
    dist_scheduler: Chosen[str | None]
    max_jobs: Chosen[int | None]  # None: from the host's memory, or the sccache-dist cluster's CPUs
    keep_build: Chosen[bool]
    mirrors: Chosen[tuple[str, ...]]
    env_backend: Chosen[str | None]  # None: chosen from what the host has

    @property
    def may_use_sccache(self) -> bool:
        """Whether the compiler cache can be sccache (its scheduler is worth asking)."""
        return self.compiler_cache.value in ("auto", "sccache")


def portable_choice(recipe: Recipe, options: BuildOptions, environ: Mapping[str, str]) -> Chosen[bool]:
    """default (no) < recipe ``[build] portable`` < ``SRCBUILD_PORTABLE`` < ``--portable``
    (``srcbuild.resolve.portable.portable_setting``)."""
    return portable_setting(recipe, options.portable, environ)


def compiler_cache_choice(recipe_kind: str | None, cli_kind: str | None, environ: Mapping[str, str]) -> Chosen[str]:
    """default (auto) < recipe ``[build] compiler_cache`` < ``SRCBUILD_CCACHE=0`` (none) <
    ``SRCBUILD_COMPILER_CACHE`` < ``--compiler-cache``."""
    off = env_bool(environ, "SRCBUILD_CCACHE") if (env_value(environ, "SRCBUILD_CCACHE") or "").strip() else None
    return precedence(
        Chosen("auto", "default (sccache, else ccache, when installed)"),
        Chosen(recipe_kind, "recipe [build] compiler_cache") if recipe_kind else None,
        Chosen("none", origin(environ, "SRCBUILD_CCACHE")) if off is False else None,
        from_env(environ, "SRCBUILD_COMPILER_CACHE", str),
        from_cli(cli_kind or None, "--compiler-cache"),
    )


def compiler_cache_url_choice(cli_url: str | None, environ: Mapping[str, str]) -> Chosen[str | None]:
    """default (none) < ``SRCBUILD_COMPILER_CACHE_URL`` < ``--compiler-cache-url``."""
    return precedence(
        Chosen(None, "default"),
        from_env(environ, "SRCBUILD_COMPILER_CACHE_URL", str),
        from_cli(cli_url or None, "--compiler-cache-url"),
    )


def dist_scheduler_choice(cli_dist: str | None, environ: Mapping[str, str]) -> Chosen[str | None]:
    """default (none) < ``SRCBUILD_DIST_SCHEDULER`` < ``--dist-scheduler``."""
    return precedence(
        Chosen(None, "default"),
        from_env(environ, "SRCBUILD_DIST_SCHEDULER", str),
        from_cli(cli_dist or None, "--dist-scheduler"),
    )


_NO_MIRRORS: tuple[str, ...] = ()


def _one_mirror(raw: str) -> tuple[str, ...]:
    return (raw,)


def decide(recipe: Recipe, options: BuildOptions, environ: Mapping[str, str]) -> Decided:
    """Every setting of a build of ``recipe`` that the command line, the environment, the config
    file or the recipe decides, with its origin."""
    if options.max_jobs is not None and options.max_jobs < 1:
        raise UsageError(f"--max-jobs {options.max_jobs} must be at least 1", "pass --max-jobs 1 or more")
    mirrors = precedence(
        Chosen(_NO_MIRRORS, "default"),
        from_env(environ, "SRCBUILD_MIRROR", _one_mirror),
        from_cli(tuple(options.mirrors) or None, "--mirror"),
    )
    mirror_dir = env_value(environ, MIRROR_DIR_VAR)
    if mirror_dir:  # every git URL onto the mirror directory, whatever --mirror says
        mirrors = Chosen((env_value(environ, "SRCBUILD_MIRROR") or "",), f"--mirror-dir {mirror_dir}")
    keep = precedence(
        Chosen(False, "default"),
        from_env_bool(environ, "SRCBUILD_KEEP_BUILD"),
        from_cli(options.keep_build, "--keep-build"),
    )
    return Decided(
        cuda_home=precedence(
            Chosen(None, "host probe"),
            from_env(environ, "SRCBUILD_CUDA_HOME", str),
            from_cli(options.cuda_home or None, "--cuda-home"),
        ),
        portable=portable_choice(recipe, options, environ),
        compiler_cache=compiler_cache_choice(recipe.build.compiler_cache, options.compiler_cache, environ),
        compiler_cache_url=compiler_cache_url_choice(options.compiler_cache_url, environ),
        dist_scheduler=dist_scheduler_choice(options.dist_scheduler, environ),
        max_jobs=precedence(
            Chosen(None, "default (host memory)"),
            from_env(environ, "MAX_JOBS", _jobs("MAX_JOBS")),
            from_cli(options.max_jobs, "--max-jobs"),
        ),
        keep_build=keep,
        mirrors=mirrors,
        env_backend=precedence(
            Chosen(None, "default (a venv when the host has the recipe's Python, else a conda environment)"),
            from_env(environ, "SRCBUILD_ENV_BACKEND", str),
            from_cli(options.env_backend or None, "--env-backend"),
        ),
    )
