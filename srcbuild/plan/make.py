"""``make_plan``: a resolved build becomes a ``Plan``. Pure: no I/O, no PATH lookup, no optional import.

Every decision (paths, compiler, environment backend, mirrors, patch hashes, build variables) was
made by ``srcbuild.resolve``; this module only orders the steps and writes their commands. The
same function feeds ``srcbuild plan`` (which prints the plan) and ``srcbuild torch`` (which runs
it), so what is shown and what runs cannot drift apart.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from srcbuild.command import Command
from srcbuild.compiler_cache import CompilerCacheConfig
from srcbuild.envmods import EnvChanges
from srcbuild.packages import package_spec, pinned_packages
from srcbuild.plan.actions import (
    CacheWheel,
    CheckBuildTree,
    CheckEnv,
    CheckLocalChanges,
    CompilerCacheStart,
    CompilerCacheStats,
    EnsureEnv,
    Preflight,
    Provision,
    RetagWheel,
    TorchWheel,
    VerifyWheel,
)
from srcbuild.plan.canary import canary_step
from srcbuild.plan.compiler import selection_commands
from srcbuild.plan.model import Plan, Step, logs_dir, settings_hash, step_log
from srcbuild.plan.sources import patches_step, sources_steps
from srcbuild.plan.vision import supported_arches_step
from srcbuild.resolve import ResolvedBuild
from srcbuild.resolve.variables import cmake_settings, wheel_version
from srcbuild.rules.host import DISK_MIN_GIB
from srcbuild.sources.sync import SourceSync

SETTINGS_HASH_FILE = "cmake-settings.hash"


def make_plan(resolved: ResolvedBuild) -> Plan:
    """The ordered steps of the build ``resolved`` describes."""
    r = resolved
    package = r.package.name
    steps: list[Step] = [_preflight_step(r)]
    if r.package.needs_torch_wheel:
        steps.append(_torch_wheel_step(r))
    if r.provisioning:  # the compiler step registers a provisioned gcc: it must exist by then
        steps.append(provision_step(r))
    steps.append(compiler_step(r))
    sources = SourceSync(
        r.pin,
        r.checkout,
        r.paths.git_cache_dir,
        r.mirrors,
        r.options.git_jobs,
        label=package,
        accept_moved=r.options.accept_moved_tag,
    )
    steps.extend(sources_steps(sources))
    patch = patches_step(r.checkout, r.applied_patches)
    if patch is not None:
        steps.append(patch)
    steps.append(environment_step(r))
    if r.package.needs_torch_wheel:
        steps.append(_install_torch_step(r))
        # compute capability 3.0: after the install
        arches = supported_arches_step(r.unlisted_arches, r.unlisted_source, r.python, package)
        if arches is not None:
            steps.append(arches)
    cmake = cmake_settings(r.env_changes)
    digest = settings_hash(cmake)  # the one hash of what reaches CMake: the plan shows it, the step compares it
    clean = _clean_command(r.checkout, r.python, r.env_changes)
    steps.append(_build_tree_step(r.checkout, r.build_root, r.python, digest, clean))
    steps.append(_local_changes_step(r, sources))
    cc = r.compiler_cache
    if cc.enabled:
        steps.append(_compiler_cache_step(cc, start=True))
    if package_spec(package).has_canary:
        steps.append(canary_step(r))
    steps.append(_build_step(package, r.checkout, r.python, r.env_changes, r.version, clean))
    build_log = step_log(logs_dir(r.build_root), len(steps), "build")
    if cc.enabled:
        steps.append(_compiler_cache_step(cc, start=False))
    wheels = f"{package}-{r.version}-*.whl"
    steps.append(
        Step(
            id="verify",
            title="Verify the wheel",
            why="the wheel must hold kernels for every arch of the recipe (and MPI when asked for); a wheel "
            "that does not is never cached",
            action=VerifyWheel(r.dist_dir, wheels),
        )
    )
    if r.portable is not None:
        steps.append(
            Step(
                id="retag",
                title="Tag the wheel manylinux_X_Y",
                why=f"a portable build (built against glibc {r.portable.glibc}): the platform tag becomes the "
                "manylinux_X_Y its ELF symbol versions allow, so pip on other distributions accepts it; CUDA "
                "and system libraries stay outside the wheel, as in the official torch wheels",
                action=RetagWheel(r.dist_dir, wheels, r.portable.python),
                writes_checkout=True,
            )
        )
    steps.append(
        Step(
            id="cache",
            title="Store the wheel in the cache",
            why="a later build of the same inputs (and the builds of the packages built against it) reuses it "
            "without compiling",
            action=CacheWheel(
                r.dist_dir, wheels, r.paths.cache_dir, sources, tuple(p.path for p in r.applied_patches), build_log
            ),
        )
    )
    return Plan(
        package=package,
        recipe=r.recipe.name,
        version=r.version,
        settings=r.settings,
        steps=tuple(steps),
        env=r.env_changes,
        checkout=r.checkout,
        build_root=r.build_root,
        dist_dir=r.dist_dir,
        cmake_settings=cmake,
        cmake_settings_hash=digest,
        keep_build=r.keep_build,
        system_alternatives=r.compiler.system,
        findings=r.findings,
        compiler_tree=r.compiler.tree,
        disk_need_bytes=DISK_MIN_GIB * 2**30,
    )


def _preflight_step(r: ResolvedBuild) -> Step:
    return Step(
        id="preflight",
        title="Preflight: compatibility rules and host checks",
        why="stop before any download or compile when the pins contradict upstream or this machine lacks a "
        "tool (nvcc of the pinned CUDA, gcc, cuDNN, MPI, disk, memory)",
        action=Preflight(r.recipe.name, r.package.name, r.options.ignore_preflight),
    )


def provision_step(r: ResolvedBuild) -> Step:
    what = ", ".join(p.offer.request.label for p in r.provisioning)
    return Step(
        id="provision",
        title=f"Provision the toolchain this host lacks: {what}",
        why="the recipe pins tools this machine does not have; srcbuild fetches them (sha256-checked) into "
        f"private prefixes under {r.paths.toolchain_dir}, shared by every recipe (--no-provision: stop instead)",
        action=Provision(tuple(r.provisioning)),
    )


def compiler_step(r: ResolvedBuild) -> Step:
    c = r.compiler
    commands = selection_commands(c.tree, c.gcc, c.gxx, c.major)
    if c.system:
        why = (
            f"select gcc-{c.major} system-wide as the classic instructions do (needs root); the previous "
            "selection is recorded first and restored when the build ends, also on failure"
        )
        title = f"Compiler: gcc-{c.major} via system update-alternatives"
    else:
        why = (
            f"select gcc-{c.major} without touching the system: a private update-alternatives tree whose bin "
            "directory goes first on PATH, with CC, CXX and CUDAHOSTCXX pointing into it"
        )
        title = f"Compiler: gcc-{c.major} via a private update-alternatives tree"
    if r.portable is not None:
        title = f"Compiler: conda gcc-{c.major} with its glibc {r.portable.glibc} sysroot, selected privately"
        why += f"; a portable build: this gcc compiles and links against the sysroot {r.portable.sysroot}"
    return Step(id="compiler", title=title, why=why, commands=commands)


def environment_step(r: ResolvedBuild) -> Step:
    env = r.environment
    prefix, python = env.prefix, env.python
    q = shlex.quote
    if env.existing:
        missing = f"this build uses the existing environment {prefix} (--env), which has no bin/python"
        return Step(
            id="environment",
            title=f"Build environment: existing {prefix}",
            why="--env names an environment to build in; it is used as it is",
            action=CheckEnv(
                prefix,
                python,
                (f"if [ ! -x {q(f'{prefix}/bin/python')} ]; then echo {q(missing)} >&2; exit 1; fi",),
            ),
        )
    if env.error is not None:  # shown in the plan; the build stops at this step with the same words
        message, hint = env.error
        return Step(
            id="environment",
            title=f"Build environment: Python {python} (no way to make it here)",
            why=f"a Python {python} with the build dependencies of {_whose_dependencies(r)}",
            action=EnsureEnv(
                "",
                prefix,
                None,
                "",
                (f"echo {q(f'error: {message}')} >&2", f"echo {q(f'hint: {hint}')} >&2", "exit 1"),
                error=message,
                hint=hint,
            ),
        )
    assert env.spec is not None, "an environment a backend makes has its spec"
    packages = ", ".join(env.spec.conda_specs) or "no extra packages"
    return Step(
        id="environment",
        title=f"Build environment: {env.backend}, Python {python}",
        why=f"a Python {python} with the build dependencies of {_whose_dependencies(r)} "
        f"({packages}); made once and reused while its spec is unchanged",
        action=EnsureEnv(
            env.backend or "",
            prefix,
            env.lockfile,
            f"{env.backend}: " + "; ".join(env.description) + f"; linked as {prefix}",
            _environment_shell(r),
        ),
    )


def _whose_dependencies(r: ResolvedBuild) -> str:
    """``v2.5.1 and torchvision v0.20.1``: one environment serves the builds of every package a
    recipe pins, so it holds what they all need (``srcbuild.envs.spec.env_spec_for``)."""
    others = [f"{name} {package_spec(name).pin(r.recipe).tag}" for name in pinned_packages(r.recipe) if name != "torch"]
    named = [r.recipe.torch.tag, *others]
    return " and ".join([", ".join(named[:-1]), named[-1]]) if len(named) > 1 else named[0]


def _environment_shell(r: ResolvedBuild) -> tuple[str, ...]:
    """Make the environment by hand where plain commands can (venv, conda family without a
    lockfile); otherwise name the one the script expects and stop when it is absent."""
    env = r.environment
    q = shlex.quote
    link, target = env.prefix, env.target or env.prefix
    if target == link:  # a venv, made in place of the stable link
        made = [f"  {Command(argv, '').shell()}" for argv in env.create_shell]
        return (f"if [ ! -x {q(f'{link}/bin/python')} ]; then", *made, "fi")
    if env.create_shell:
        make = [f"    {Command(argv, '').shell()}" for argv in env.create_shell]
    else:
        how = f"srcbuild env create --recipe {r.recipe.path or r.recipe.name} --env-backend {env.backend}"
        expects = f"this script expects the {env.backend} environment {target}; create it with: {how}"
        make = [f"    echo {q(expects)} >&2", "    exit 1"]
    return (
        f"if [ ! -x {q(f'{link}/bin/python')} ]; then",
        f"  if [ ! -x {q(f'{target}/bin/python')} ]; then",
        *make,
        "  fi",
        f"  mkdir -p {q(str(link.parent))} && ln -sfn {q(str(target))} {q(str(link))}",
        "fi",
    )


def _torch_wheel_step(r: ResolvedBuild) -> Step:
    dest = r.build_root / "torch-wheel"
    return Step(
        id="torch-wheel",
        title=f"Torch wheel of recipe {r.recipe.name}",
        why=f"{r.package.name} builds against the torch wheel of the same recipe: taken from the cache, built "
        "first when missing",
        action=TorchWheel(r.recipe.name, dest),
    )


def _install_torch_step(r: ResolvedBuild) -> Step:
    version = wheel_version(r.recipe, r.recipe.torch.tag)
    argv = (
        str(r.python),
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--force-reinstall",
        "--no-index",
        "--find-links",
        str(r.build_root / "torch-wheel"),
        f"torch=={version}",
    )
    return Step(
        id="install-torch",
        title=f"Install torch {version} into the build environment",
        why=f"{r.package.name}'s setup.py imports torch and builds against it",
        commands=(Command(argv, "the recipe's own torch wheel, never one from an index"),),
    )


def _build_tree_step(checkout: Path, root: Path, python: Path, digest: str, cleanup: Command) -> Step:
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
        action=CheckBuildTree(digest, hash_file, cache, shell, (cleanup,)),
        writes_checkout=True,
    )


def _compiler_cache_step(config: CompilerCacheConfig, start: bool) -> Step:
    if start:
        return Step(
            id="compiler-cache",
            title=f"Start the compiler cache ({config.kind})",
            why="its settings are read when it starts: a cache started earlier may point elsewhere; its "
            "counters before the build are kept so the result says what this build reused",
            action=CompilerCacheStart(config),
        )
    return Step(
        id="compiler-cache-stats",
        title="Read the compiler cache's counters",
        why="the build result reports how many compile units came from the cache (hits) and how many were compiled",
        action=CompilerCacheStats(config),
    )


def _local_changes_step(r: ResolvedBuild, sync: SourceSync) -> Step:
    return Step(
        id="local-changes",
        title="Look for local modifications",
        why="a wheel built from hand-edited sources is recorded as modified in the cache, never as the clean tag",
        action=CheckLocalChanges(sync, tuple(p.path for p in r.applied_patches)),
    )


def _clean_command(checkout: Path, python: Path, env: EnvChanges) -> Command:
    return Command((str(python), "setup.py", "clean"), "remove the failed build's outputs", cwd=checkout, env=env)


def _build_step(package: str, checkout: Path, python: Path, env: EnvChanges, version: str, clean: Command) -> Step:
    return Step(
        id="build",
        title=f"Build {package} {version}",
        why="python setup.py bdist_wheel with the build variables above; full output goes to the log",
        commands=(
            Command((str(python), "setup.py", "bdist_wheel"), f"build the {package} wheel", cwd=checkout, env=env),
        ),
        progress=True,
        on_failure=(clean,),
        writes_checkout=True,
    )
