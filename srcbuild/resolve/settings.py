"""Resolved build settings, each with its source: default < recipe < environment < command line.

The build prints these first, so a user sees which value won and why before anything runs.
Nothing downstream reads ``os.environ``: the environment is passed in as a mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from srcbuild.compiler_cache import CompilerCacheConfig, resolve_compiler_cache
from srcbuild.config import env_bool, origin
from srcbuild.errors import UsageError
from srcbuild.mirror.layout import DIR_VAR as MIRROR_DIR_VAR
from srcbuild.recipe import Recipe
from srcbuild.resolve.inputs import BuildHost, BuildOptions
from srcbuild.resolve.model import Setting
from srcbuild.resolve.portable import portable_choice


@dataclass(frozen=True)
class ResolvedSettings:
    """The settings as values the planner uses, plus the printable list with sources."""

    settings: tuple[Setting, ...]
    max_jobs: int
    max_jobs_reason: str
    keep_build: bool
    mirrors: tuple[str, ...]
    env_backend: str | None  # None: chosen automatically
    env_prefix: str | None
    cuda_home: str | None
    ccache: str | None  # the compiler launcher (sccache or ccache), None when off
    compiler_mode: str  # "private" or "system"
    compiler_cache: CompilerCacheConfig = field(default_factory=CompilerCacheConfig)
    portable: bool = False  # build against the old glibc sysroot and tag manylinux (resolve.portable)

    def value(self, name: str) -> str:
        for s in self.settings:
            if s.name == name:
                return s.value
        raise KeyError(name)


def _env_int(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a whole number", f"set {name} to a number of jobs, e.g. 4") from None
    if value < 1:
        raise UsageError(f"{name}={raw!r} must be at least 1", f"set {name} to a number of jobs, e.g. 4")
    return value


def resolve_settings(
    recipe: Recipe,
    options: BuildOptions,
    host: BuildHost,
    environ: Mapping[str, str],
    work_dir: Path | None = None,
) -> ResolvedSettings:
    """Every setting of one build with the source of its value."""
    recipe_src = f"recipe {recipe.path.name if recipe.path else recipe.name}"
    out: list[Setting] = [
        Setting("recipe", recipe.name, recipe_src),
        Setting("package", options.package, "command line"),
        Setting("python", recipe.toolchain.python, recipe_src + " [toolchain.python]"),
        Setting("gcc", recipe.toolchain.gcc, recipe_src + " [toolchain.gcc]"),
        Setting("cuda", recipe.toolchain.cuda or "none", recipe_src + " [toolchain.cuda]"),
        Setting("cudnn", recipe.toolchain.cudnn or "none", recipe_src + " [toolchain.cudnn]"),
        Setting("TORCH_CUDA_ARCH_LIST", recipe.gpu.torch_cuda_arch_list or "(CPU only)", recipe_src + " [gpu]"),
        Setting("mpi", "on" if recipe.mpi.enabled else "off", recipe_src + " [mpi]"),
    ]

    # MAX_JOBS: memory-based default < the sccache-dist cluster's CPUs (host probe) < MAX_JOBS < --max-jobs.
    # With a cluster, its build servers compile and this machine only preprocesses.
    max_jobs, source, why = host.max_jobs, "default (host memory)", host.max_jobs_reason
    cluster = host.dist_cluster
    if cluster is not None and cluster.usable:
        max_jobs, source, why = cluster.cpus, "host probe (sccache-dist)", f"{cluster.describe()} ({cluster.source})"
    elif cluster is not None:
        why = f"{host.max_jobs_reason}; {cluster.describe()}"
    env_jobs = _env_int(environ, "MAX_JOBS")
    if env_jobs is not None:
        max_jobs, source, why = env_jobs, "environment MAX_JOBS", ""
    if options.max_jobs is not None:
        if options.max_jobs < 1:
            raise UsageError(f"--max-jobs {options.max_jobs} must be at least 1", "pass --max-jobs 1 or more")
        max_jobs, source, why = options.max_jobs, "command line --max-jobs", ""
    out.append(Setting("max_jobs", str(max_jobs), source, why))

    keep, source = False, "default"
    env_keep = env_bool(environ, "SRCBUILD_KEEP_BUILD")
    if env_keep is not None:
        keep, source = env_keep, origin(environ, "SRCBUILD_KEEP_BUILD")
    if options.keep_build is not None:
        keep, source = options.keep_build, "command line --keep-build"
    out.append(Setting("keep_build", "yes" if keep else "no", source, "keep the build tree after a failure"))

    mirrors: tuple[str, ...] = ()
    source = "default"
    if environ.get("SRCBUILD_MIRROR"):
        mirrors, source = (environ["SRCBUILD_MIRROR"],), origin(environ, "SRCBUILD_MIRROR")
    if options.mirrors:
        mirrors, source = tuple(options.mirrors), "command line --mirror"
    if environ.get(MIRROR_DIR_VAR):  # every git URL onto the mirror directory, whatever --mirror says
        mirrors, source = (environ["SRCBUILD_MIRROR"],), f"--mirror-dir {environ[MIRROR_DIR_VAR]}"
    out.append(Setting("mirrors", " ".join(mirrors) or "(none)", source))

    backend: str | None = None
    source = "default (a venv when the host has the recipe's Python, else a conda environment)"
    if environ.get("SRCBUILD_ENV_BACKEND"):
        backend, source = environ["SRCBUILD_ENV_BACKEND"], origin(environ, "SRCBUILD_ENV_BACKEND")
    if options.env_backend:
        backend, source = options.env_backend, "command line --env-backend"
    prefix = options.env_prefix
    if prefix:
        out.append(Setting("environment", prefix, "command line --env", "an existing environment is used as is"))
    else:
        out.append(Setting("env_backend", backend or "auto", source))

    cuda_home: str | None = None
    if recipe.toolchain.cuda is not None:
        source = host.cuda_home_source
        cuda_home = str(host.cuda_home) if host.cuda_home else None
        if environ.get("SRCBUILD_CUDA_HOME"):
            cuda_home, source = environ["SRCBUILD_CUDA_HOME"], "environment SRCBUILD_CUDA_HOME"
        if options.cuda_home:
            cuda_home, source = options.cuda_home, "command line --cuda-home"
        out.append(Setting("cuda_home", cuda_home or "(not found)", source))

    env_bool(environ, "SRCBUILD_CCACHE")  # a value that is not yes/no is an error
    found = {"ccache": host.ccache, "sccache": host.sccache}
    compiler_cache = resolve_compiler_cache(
        cli_kind=options.compiler_cache,
        cli_url=options.compiler_cache_url,
        cli_dist=options.dist_scheduler,
        recipe_kind=recipe.build.compiler_cache,
        environ=environ,
        work_dir=work_dir or Path("work"),
        which=lambda name: str(found[name]) if found.get(name) else None,
    )
    ccache = compiler_cache.launcher if compiler_cache.enabled else None
    out.append(Setting("compiler_cache", compiler_cache.label(), compiler_cache.source))

    portable = portable_choice(recipe, options, environ)
    out.append(
        Setting(
            "portable",
            "yes (conda gcc + glibc sysroot, manylinux tag)" if portable.on else "no",
            portable.source,
            "wheel runs on other distributions" if portable.on else "",
        )
    )

    mode = "system" if options.system_alternatives else "private"
    out.append(
        Setting(
            "compiler_selection",
            "system update-alternatives (restored afterwards)" if mode == "system" else "private update-alternatives",
            "command line --system-alternatives" if mode == "system" else "default",
        )
    )
    return ResolvedSettings(
        settings=tuple(out),
        max_jobs=max_jobs,
        max_jobs_reason=why,
        keep_build=keep,
        mirrors=mirrors,
        env_backend=backend,
        env_prefix=prefix,
        cuda_home=cuda_home,
        ccache=ccache,
        compiler_mode=mode,
        compiler_cache=compiler_cache,
        portable=portable.on,
    )
