"""``make_plan``: a resolved recipe, the options and the host facts become a ``Plan``. Pure.

The same function feeds ``srcbuild plan`` (which prints the plan) and ``srcbuild torch`` (which
runs it), so what is shown and what runs cannot drift apart.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from srcbuild.command import Command
from srcbuild.compiler_cache import CompilerCacheConfig, launcher_env
from srcbuild.envmods import EnvChanges
from srcbuild.errors import HostError, RecipeError, UsageError
from srcbuild.execute import compiler
from srcbuild.execute.variables import (
    Toolset,
    cmake_settings,
    torch_variables,
    vision_variables,
    wheel_version,
)
from srcbuild.paths import Paths
from srcbuild.plan.inputs import PACKAGES, BuildHost, BuildOptions
from srcbuild.plan.model import Action, Plan, Step, settings_hash
from srcbuild.plan.settings import ResolvedSettings, resolve_settings
from srcbuild.plan.sources import patches_step, sources_steps
from srcbuild.plan.vision import supported_arches_step
from srcbuild.recipe import Recipe, SourcePin

SETTINGS_HASH_FILE = "cmake-settings.hash"


def build_root(paths: Paths, recipe: Recipe, package: str) -> Path:
    return paths.builds_dir / f"{recipe.name}-{package}"


def checkout_dir(paths: Paths, recipe: Recipe, package: str) -> Path:
    return paths.sources_dir / recipe.name / ("pytorch" if package == "torch" else "vision")


def env_prefix(paths: Paths, recipe: Recipe, settings: ResolvedSettings) -> Path:
    if settings.env_prefix:
        return Path(settings.env_prefix).expanduser().resolve()
    return paths.envs_dir / f"{recipe.name}-py{recipe.toolchain.python}"


def make_plan(
    recipe: Recipe,
    options: BuildOptions,
    host: BuildHost,
    paths: Paths,
    environ: Mapping[str, str],
) -> Plan:
    """The ordered steps of one build of ``options.package`` for ``recipe``."""
    if options.package not in PACKAGES:
        raise UsageError(f"unknown package {options.package!r}", f"choose one of: {', '.join(PACKAGES)}")
    if options.package == "torchvision" and recipe.torchvision is None:
        raise RecipeError(
            f"recipe {recipe.name} pins no torchvision tag",
            f"add a [torchvision] table with tag = ... to {recipe.path or recipe.name}",
        )
    settings = resolve_settings(recipe, options, host, environ, paths.work_dir)
    package = options.package
    pin: SourcePin = recipe.torch if package == "torch" else recipe.torchvision  # type: ignore[assignment]
    checkout = checkout_dir(paths, recipe, package)
    root = build_root(paths, recipe, package)
    prefix = env_prefix(paths, recipe, settings)
    python = prefix / "bin" / "python"
    cuda = recipe.toolchain.cuda is not None

    comp_step, tree = _compiler_step(recipe, host, paths, settings)
    tools = Toolset(
        cc=str(tree.links_dir / "gcc"),
        cxx=str(tree.links_dir / "g++"),
        cuda_home=settings.cuda_home,
        cudnn_root=str(host.cudnn_root) if host.cudnn_root else settings.cuda_home,
        env_prefix=str(prefix),
        max_jobs=settings.max_jobs,
        max_jobs_reason=settings.max_jobs_reason,
        ccache=settings.ccache,
        launcher_env=tuple(launcher_env(settings.compiler_cache)),
    )
    variables = torch_variables(recipe, tools) if package == "torch" else vision_variables(recipe, tools)
    comp_env = compiler.compiler_env(tree, cuda, private=settings.compiler_mode == "private")
    # The compiler goes last so its bin dir ends up first on PATH.
    build_env = variables.extend(comp_env)
    version = wheel_version(recipe, pin.tag)

    steps: list[Step] = [_preflight_step(recipe, package, options.ignore_preflight)]
    if package == "torchvision":
        steps.append(_torch_wheel_step(recipe, root))
    steps.append(comp_step)
    steps.extend(sources_steps(pin, checkout, paths.git_cache_dir, settings.mirrors, environ, options.git_jobs))
    labels = tuple(recipe.build.patches) if package == "torch" else ()
    files = tuple(recipe.build.patch_files) if package == "torch" else ()
    patch = patches_step(checkout, files, labels)
    if patch is not None:
        steps.append(patch)
    steps.append(_environment_step(recipe, settings, prefix, environ))
    if package == "torchvision":
        steps.append(_install_torch_step(recipe, python, root))
        arches = supported_arches_step(recipe, python)  # compute capability 3.0: after the install
        if arches is not None:
            steps.append(arches)
    cmake = cmake_settings(build_env)
    steps.append(_build_tree_step(checkout, root, python, cmake))
    steps.append(_local_changes_step(checkout))
    if settings.compiler_cache.enabled:
        steps.append(_compiler_cache_step(settings.compiler_cache, "start"))
    steps.append(_build_step(package, checkout, python, build_env, version))
    if settings.compiler_cache.enabled:
        steps.append(_compiler_cache_step(settings.compiler_cache, "stats"))
    steps.append(
        Step(
            id="verify",
            title="Verify the wheel",
            why="the wheel must hold kernels for every arch of the recipe (and MPI when asked for); a wheel "
            "that does not is never cached",
            action=Action(
                "verify-wheel",
                f"check {package}-{version}-*.whl against the recipe's archs",
                args=(("dist", str(checkout / "dist")), ("pattern", f"{package}-{version}-*.whl")),
            ),
        )
    )
    steps.append(
        Step(
            id="cache",
            title="Store the wheel in the cache",
            why="a later build of the same inputs (and torchvision's build) reuses it without compiling",
            action=Action(
                "cache-wheel",
                f"store the wheel and its manifest under {paths.cache_dir}",
                args=(("dist", str(checkout / "dist")), ("pattern", f"{package}-{version}-*.whl")),
            ),
        )
    )
    return Plan(
        package=package,
        recipe=recipe.name,
        version=version,
        settings=settings.settings,
        steps=tuple(steps),
        env=build_env,
        checkout=checkout,
        build_root=root,
        dist_dir=checkout / "dist",
        cmake_settings=cmake,
        keep_build=settings.keep_build,
        system_alternatives=settings.compiler_mode == "system",
    )


def _preflight_step(recipe: Recipe, package: str, ignore: bool) -> Step:
    what = f"check recipe {recipe.name} and this host for a {package} build"
    if ignore:
        what += " (--ignore-preflight: errors are reported, the build goes on)"
    return Step(
        id="preflight",
        title="Preflight: compatibility rules and host checks",
        why="stop before any download or compile when the pins contradict upstream or this machine lacks a "
        "tool (nvcc of the pinned CUDA, gcc, cuDNN, MPI, disk, memory)",
        action=Action("preflight", what, args=(("ignore", "1" if ignore else ""),)),
    )


def _compiler_step(
    recipe: Recipe, host: BuildHost, paths: Paths, settings: ResolvedSettings
) -> tuple[Step, compiler.AlternativesTree]:
    major = recipe.toolchain.gcc
    gcc = host.gcc or Path(f"/usr/bin/gcc-{major}")
    gxx = host.gxx or Path(f"/usr/bin/g++-{major}")
    log = paths.work_dir / "compilers" / "update-alternatives.log"
    if settings.compiler_mode == "system":
        tree = compiler.AlternativesTree(links_dir=Path("/usr/bin"), log=log, program=host.update_alternatives)
        why = (
            f"select gcc-{major} system-wide as the classic instructions do (needs root); the previous "
            "selection is recorded first and restored when the build ends, also on failure"
        )
        return (
            Step(
                id="compiler",
                title=f"Compiler: gcc-{major} via system update-alternatives",
                why=why,
                commands=compiler.selection_commands(tree, gcc, gxx, major),
            ),
            tree,
        )
    tree = compiler.private_tree(paths.work_dir / "compilers" / f"gcc-{major}", host.update_alternatives)
    why = (
        f"select gcc-{major} without touching the system: a private update-alternatives tree whose bin "
        "directory goes first on PATH, with CC, CXX and CUDAHOSTCXX pointing into it"
    )
    return (
        Step(
            id="compiler",
            title=f"Compiler: gcc-{major} via a private update-alternatives tree",
            why=why,
            commands=compiler.selection_commands(tree, gcc, gxx, major),
        ),
        tree,
    )


def _environment_step(recipe: Recipe, settings: ResolvedSettings, prefix: Path, environ: Mapping[str, str]) -> Step:
    if settings.env_prefix:
        return Step(
            id="environment",
            title=f"Build environment: existing {prefix}",
            why="--env names an environment to build in; it is used as it is",
            action=Action(
                "check-env",
                f"check {prefix}/bin/python is Python {recipe.toolchain.python}",
                args=(("prefix", str(prefix)), ("python", recipe.toolchain.python)),
                shell=(f"test -x {shlex.quote(str(prefix / 'bin' / 'python'))}",),
            ),
        )
    from srcbuild.envs import default_lockfile
    from srcbuild.envs.backends import choose_backend
    from srcbuild.envs.spec import env_spec_for

    spec = env_spec_for(recipe, environ=environ)
    lockfile = default_lockfile(recipe)  # recipes/R.conda-lock.yml: install exactly it, no solve
    try:
        backend = choose_backend(settings.env_backend, spec, environ)
    except HostError as exc:  # shown in the plan; the build stops at this step with the same words
        return Step(
            id="environment",
            title=f"Build environment: Python {recipe.toolchain.python} (no way to make it here)",
            why=f"a Python {recipe.toolchain.python} with the build dependencies of {recipe.torch.tag}",
            action=Action(
                "ensure-env",
                f"cannot: {exc.message}",
                args=(("backend", ""), ("link", str(prefix)), ("error", exc.message), ("hint", exc.hint or "")),
            ),
        )
    described = backend.describe(spec, prefix, lockfile)
    shell: tuple[str, ...] = ()
    if backend.name == "venv":  # the same commands, made in place of the stable link
        from srcbuild.envs.backends.venv_backend import VenvBackend

        made = [f"  {c.shell()}" for c in VenvBackend().commands(spec, prefix)]
        shell = (f"if [ ! -x {shlex.quote(str(prefix / 'bin' / 'python'))} ]; then", *made, "fi")
    return Step(
        id="environment",
        title=f"Build environment: {backend.name}, Python {recipe.toolchain.python}",
        why=f"a Python {recipe.toolchain.python} with the build dependencies of {recipe.torch.tag} "
        f"({', '.join(spec.conda_specs) or 'no extra packages'}); made once and reused while its spec is unchanged",
        action=Action(
            "ensure-env",
            f"{backend.name}: " + "; ".join(described) + f"; linked as {prefix}",
            args=(("backend", backend.name), ("link", str(prefix)), ("lockfile", str(lockfile or ""))),
            shell=shell,
        ),
    )


def _torch_wheel_step(recipe: Recipe, root: Path) -> Step:
    return Step(
        id="torch-wheel",
        title=f"Torch wheel of recipe {recipe.name}",
        why="torchvision builds against the torch wheel of the same recipe: taken from the cache, built first "
        "when missing",
        action=Action(
            "torch-wheel",
            f"find (or build) torch for {recipe.name} and copy it to {root / 'torch-wheel'}",
            args=(("dest", str(root / "torch-wheel")),),
        ),
    )


def _install_torch_step(recipe: Recipe, python: Path, root: Path) -> Step:
    version = wheel_version(recipe, recipe.torch.tag)
    argv = (
        str(python),
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--force-reinstall",
        "--no-index",
        "--find-links",
        str(root / "torch-wheel"),
        f"torch=={version}",
    )
    return Step(
        id="install-torch",
        title=f"Install torch {version} into the build environment",
        why="torchvision's setup.py imports torch and builds against it",
        commands=(Command(argv, "the recipe's own torch wheel, never one from an index"),),
    )


def _build_tree_step(checkout: Path, root: Path, python: Path, cmake: tuple[tuple[str, str], ...]) -> Step:
    digest = settings_hash(cmake)
    hash_file = root / SETTINGS_HASH_FILE
    cache = checkout / "build" / "CMakeCache.txt"
    q = shlex.quote
    clean = f"(cd {q(str(checkout))} && {q(str(python))} setup.py clean)"
    shell = (
        f'if [ -f {q(str(cache))} ] && [ "$(cat {q(str(hash_file))} 2>/dev/null)" != {digest} ]; then {clean}; fi',
        f"mkdir -p {q(str(root))} && echo {digest} > {q(str(hash_file))}",
    )
    return Step(
        id="build-tree",
        title="Check the build tree is not stale",
        why="CMake reads its settings only on the first configure: a build/CMakeCache.txt made with other "
        "settings is cleaned instead of silently reused",
        action=Action(
            "check-build-tree",
            f"compare the settings hash {digest} with the one stored beside the build tree; clean on a mismatch",
            args=(("hash", digest), ("hash_file", str(hash_file)), ("cache", str(cache))),
            shell=shell,
        ),
    )


def _compiler_cache_step(config: CompilerCacheConfig, what: str) -> Step:
    if what == "start":
        return Step(
            id="compiler-cache",
            title=f"Start the compiler cache ({config.kind})",
            why="its settings are read when it starts: a cache started earlier may point elsewhere; its "
            "counters before the build are kept so the result says what this build reused",
            action=Action(
                "compiler-cache-start", f"start {config.label()} and read its counters", args=_cc_args(config)
            ),
        )
    return Step(
        id="compiler-cache-stats",
        title="Read the compiler cache's counters",
        why="the build result reports how many compile units came from the cache (hits) and how many were compiled",
        action=Action("compiler-cache-stats", f"read the counters of {config.label()}", args=_cc_args(config)),
    )


def _cc_args(config: CompilerCacheConfig) -> tuple[tuple[str, str], ...]:
    fields = ("kind", "launcher", "url", "dist_scheduler", "local_dir", "base_dir", "s3_endpoint", "region")
    return tuple((name, str(getattr(config, name) or "")) for name in fields)


def _local_changes_step(checkout: Path) -> Step:
    return Step(
        id="local-changes",
        title="Look for local modifications",
        why="a wheel built from hand-edited sources is recorded as modified in the cache, never as the clean tag",
        action=Action(
            "check-local-changes",
            f"compare {checkout} and its submodules with the tag plus the recipe's patches",
            args=(("checkout", str(checkout)),),
        ),
    )


def _build_step(package: str, checkout: Path, python: Path, env: EnvChanges, version: str) -> Step:
    clean = Command((str(python), "setup.py", "clean"), "remove the failed build's outputs", cwd=checkout, env=env)
    return Step(
        id="build",
        title=f"Build {package} {version}",
        why="python setup.py bdist_wheel with the build variables above; full output goes to the log",
        commands=(
            Command((str(python), "setup.py", "bdist_wheel"), f"build the {package} wheel", cwd=checkout, env=env),
        ),
        progress=True,
        on_failure=(clean,),
    )
