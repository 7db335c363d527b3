"""Resolved build settings, each with its source: default < recipe < environment < command line.

The build prints these first, so a user sees which value won and why before anything runs.
Nothing downstream reads ``os.environ``: the environment is passed in as a mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from srcbuild.compiler_cache import CompilerCacheConfig, resolve_compiler_cache
from srcbuild.recipe import Recipe
from srcbuild.records import record
from srcbuild.resolve.decide import Decided, decide
from srcbuild.resolve.inputs import BuildHost, BuildOptions
from srcbuild.resolve.model import Setting


@record
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


def resolve_settings(
    recipe: Recipe,
    options: BuildOptions,
    host: BuildHost,
    environ: Mapping[str, str],
    work_dir: Path | None = None,
    decided: Decided | None = None,
) -> ResolvedSettings:
    """Every setting of one build with the source of its value: what ``decided`` (made before the
    probe, ``srcbuild.resolve.decide``) left to the host is filled in from ``host``."""
    d = decided or decide(recipe, options, environ)
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
    if d.max_jobs.value is not None:
        max_jobs, source, why = d.max_jobs.value, d.max_jobs.origin, ""
    out.append(Setting("max_jobs", str(max_jobs), source, why))

    keep = d.keep_build.value
    keep_why = "keep the build tree after a failure"
    out.append(Setting("keep_build", "yes" if keep else "no", d.keep_build.origin, keep_why))

    mirrors = d.mirrors.value
    out.append(Setting("mirrors", " ".join(mirrors) or "(none)", d.mirrors.origin))

    backend, source = d.env_backend.value, d.env_backend.origin
    prefix = options.env_prefix
    if prefix:
        out.append(Setting("environment", prefix, "command line --env", "an existing environment is used as is"))
    else:
        out.append(Setting("env_backend", backend or "auto", source))

    cuda_home: str | None = None
    if recipe.toolchain.cuda is not None:
        source = host.cuda_home_source
        cuda_home = str(host.cuda_home) if host.cuda_home else None
        if d.cuda_home.value is not None:
            cuda_home, source = d.cuda_home.value, d.cuda_home.origin
        out.append(Setting("cuda_home", cuda_home or "(not found)", source))

    found = {"ccache": host.ccache, "sccache": host.sccache}
    compiler_cache = resolve_compiler_cache(
        named=d.compiler_cache,
        url=d.compiler_cache_url.value,
        dist=d.dist_scheduler.value,
        environ=environ,
        work_dir=work_dir or Path("work"),
        which=lambda name: str(found[name]) if found.get(name) else None,
    )
    ccache = compiler_cache.launcher if compiler_cache.enabled else None
    out.append(Setting("compiler_cache", compiler_cache.label(), compiler_cache.source))

    portable = d.portable
    out.append(
        Setting(
            "portable",
            "yes (conda gcc + glibc sysroot, manylinux tag)" if portable.value else "no",
            portable.origin,
            "wheel runs on other distributions" if portable.value else "",
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
        portable=portable.value,
    )
