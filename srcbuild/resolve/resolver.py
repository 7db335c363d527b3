"""``resolve``: the recipe, the options, the host facts and the knowledge base become a ``ResolvedBuild``.

Every decision of a build is made here, once: the package spec, the settings and their sources,
the compiler and its alternatives tree, the build environment and its backend, the parsed mirror
rules, the patches and their hashes, the build variables, MAX_JOBS and why, and every finding of
the compatibility rules and of the host rules. It reads files (the patches, a mirror map, the
knowledge base) but runs no program and probes nothing: the host facts come in as data.
``refusal`` says whether those findings stop the build, with the words ``srcbuild plan`` and
``srcbuild torch`` both use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild.compiler_cache import for_build, launcher_env
from srcbuild.envs.backends import installs_conda_packages
from srcbuild.errors import HostError, IncompatibleError, SrcbuildError, UsageError
from srcbuild.findings import Finding, Severity
from srcbuild.knowledge.build_facts import load_build_facts
from srcbuild.packages import package_spec
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve.arches import unlisted_arches
from srcbuild.resolve.compiler import AlternativesTree, compiler_env, private_tree
from srcbuild.resolve.decide import Decided
from srcbuild.resolve.environment import resolve_environment
from srcbuild.resolve.inputs import BuildHost, BuildOptions, SysrootGcc
from srcbuild.resolve.model import CompilerChoice, Portable, ResolvedBuild, ResolvedPatch
from srcbuild.resolve.portable import PORTABLE_VAR, refused_compiler, sysroot_glibc
from srcbuild.resolve.settings import ResolvedSettings, resolve_settings
from srcbuild.resolve.toolchains import resolve_toolchains
from srcbuild.resolve.variables import Toolset, variables_of, wheel_version
from srcbuild.toolchain.download import human_size
from srcbuild.toolchain.facts import DATA_VAR

if TYPE_CHECKING:
    from srcbuild.knowledge import KnowledgeBase
    from srcbuild.toolchain.planned import PlannedProvision


def _origin(tool: str, provisioning: Sequence[PlannedProvision], found: str) -> str:
    """Where a tool of the build comes from: ``found``, or the planned provisioning (route, size)."""
    for planned in provisioning:
        offer = planned.offer
        if offer.request.tool == tool:
            size = f", {human_size(offer.size)}" if offer.size else ""
            return f"{offer.request.label}: will be provisioned ({offer.provider}{size})"
    return found


def resolve(
    recipe: Recipe,
    options: BuildOptions,
    host: BuildHost,
    knowledge: KnowledgeBase,
    *,
    paths: Paths,
    environ: Mapping[str, str],
    decided: Decided | None = None,
) -> ResolvedBuild:
    """Every decision of one build of ``options.package`` for ``recipe`` (``decided``: its
    settings as ``srcbuild.resolve.decide`` decided them before the probe; decided here when None)."""
    from srcbuild.rules import check_recipe
    from srcbuild.rules.host import check_python_headers, host_findings
    from srcbuild.sources.mirrors import parse_mirror_args
    from srcbuild.sources.patches import patch_sha256

    spec = package_spec(options.package)
    pin = spec.pin(recipe)
    settings = resolve_settings(recipe, options, host, environ, paths.work_dir, decided)
    environment = resolve_environment(recipe, settings, host, paths, environ)
    portable = _portable(settings, host, environ)
    compiler = _compiler(recipe, host, paths, settings, portable)
    cuda = recipe.toolchain.cuda is not None
    build_root = paths.builds_dir / f"{recipe.name}-{spec.name}"
    compiler_cache = for_build(settings.compiler_cache, build_root)
    tools = Toolset(
        cc=str(compiler.tree.links_dir / "gcc"),
        cxx=str(compiler.tree.links_dir / "g++"),
        cuda_home=settings.cuda_home,
        cudnn_root=str(host.cudnn_root) if host.cudnn_root else settings.cuda_home,
        magma_home=str(host.magma_home) if host.magma_home else None,
        env_prefix=str(environment.prefix),
        max_jobs=settings.max_jobs,
        max_jobs_reason=settings.max_jobs_reason,
        ccache=settings.ccache,
        launcher_env=tuple(launcher_env(compiler_cache)),
        cudnn_origin=_origin("cudnn", host.provisioning, "cuDNN found on this host"),
    )
    # The compiler goes last so its bin dir ends up first on PATH.
    env_changes = variables_of(spec)(recipe, tools, knowledge).extend(
        compiler_env(compiler.tree, cuda, private=not compiler.system)
    )
    rules: list[Finding] = list(check_recipe(recipe, knowledge))
    machine: list[Finding] = list(host_findings(recipe, host.facts, paths)) if host.facts is not None else []
    if host.facts is not None and _host_python_venv(environment.backend) and not environment.existing:
        machine.extend(check_python_headers(recipe.toolchain.python))
    if portable is not None and portable.sysroot is None and host.facts is not None:
        missing = host.sysroot_gcc or SysrootGcc(portable.glibc, None)
        machine.append(refused_compiler(recipe, missing, host.gcc))
    patches = tuple(
        ResolvedPatch(name, Path(path), patch_sha256(Path(path)))
        for name, path in zip(recipe.build.patches, recipe.build.patch_files)
    )
    build_facts = load_build_facts()
    unlisted = unlisted_arches(recipe, build_facts) if spec.needs_torch_wheel else ()
    return ResolvedBuild(
        recipe=recipe,
        package=spec,
        pin=pin,
        options=options,
        paths=paths,
        settings=settings.settings,
        toolchains=resolve_toolchains(recipe, host, settings, compiler, environment, paths.toolchain_dir, portable),
        compiler=compiler,
        environment=environment,
        mirrors=parse_mirror_args(list(settings.mirrors), environ),
        patches=patches,
        env_changes=env_changes,
        max_jobs=settings.max_jobs,
        max_jobs_reason=settings.max_jobs_reason,
        keep_build=settings.keep_build,
        checkout=paths.sources_dir / recipe.name / spec.checkout_name,
        build_root=build_root,
        version=wheel_version(recipe, pin.tag),
        platform=host.platform,
        compiler_cache=compiler_cache,
        findings=(*rules, *machine),
        rule_count=len(rules),
        unlisted_arches=tuple(str(cc) for cc in unlisted),
        unlisted_source=build_facts.unlisted_source,
        provisioning=tuple(host.provisioning),
        portable=portable,
    )


KEYED_VARS = (PORTABLE_VAR, DATA_VAR)  # the variables of a command's environment a lookup keys on


def resolve_unprobed(
    recipe: Recipe, package: str, platform_tag: str | None = None, environ: Mapping[str, str] | None = None
) -> ResolvedBuild:
    """A build of ``package`` resolved without probing the host: what ``install`` and
    ``cache pull --recipe`` key on (the cache key counts no host fact but the platform). Of
    ``environ`` (the command's environment) only ``KEYED_VARS`` count: whether the build is
    portable (``SRCBUILD_PORTABLE``, or the config file's ``portable``) and the toolchain data
    that says its sysroot, so a lookup finds what a build under the same settings stored."""
    from srcbuild.host.platform import host_platform_tag
    from srcbuild.knowledge import load_knowledge

    keyed = {name: (environ or {})[name] for name in KEYED_VARS if name in (environ or {})}
    host = BuildHost(platform=platform_tag or host_platform_tag())
    options = BuildOptions(package=package)
    return resolve(recipe, options, host, load_knowledge(), paths=Paths.resolve(environ={}), environ=keyed)


def _host_python_venv(backend: str | None) -> bool:
    """Whether the backend named ``backend`` makes a venv of the host Python (no conda packages)."""
    return backend is not None and not installs_conda_packages(backend)


def _portable(settings: ResolvedSettings, host: BuildHost, environ: Mapping[str, str]) -> Portable | None:
    """A portable build's sysroot and retagging interpreter (``srcbuild.resolve.portable``)."""
    if not settings.portable:
        return None
    found = host.sysroot_gcc
    glibc = found.glibc if found is not None else sysroot_glibc(environ)
    sysroot = found.sysroot if found is not None and found.gcc is not None else None
    python = host.host_python_path or "python3"
    return Portable(glibc, sysroot, python, next(s.source for s in settings.settings if s.name == "portable"))


def _compiler(
    recipe: Recipe, host: BuildHost, paths: Paths, settings: ResolvedSettings, portable: Portable | None = None
) -> CompilerChoice:
    major = recipe.toolchain.gcc
    gcc = host.gcc or Path(f"/usr/bin/gcc-{major}")
    gxx = host.gxx or Path(f"/usr/bin/g++-{major}")
    found = host.sysroot_gcc
    if portable is not None:  # only the conda gcc with its sysroot; none: a finding refuses the build
        if settings.compiler_mode == "system":
            raise UsageError(
                "--system-alternatives cannot select a portable build's conda gcc (it is selected privately)",
                f"srcbuild torch --recipe {recipe.path or recipe.name} --portable",
            )
        gcc = found.gcc if found is not None and found.gcc else Path(f"gcc-{major}")
        gxx = found.gxx if found is not None and found.gxx else Path(f"g++-{major}")
        tree = private_tree(
            paths.work_dir / "compilers" / f"gcc-{major}-sysroot{portable.glibc}", host.update_alternatives
        )
        return CompilerChoice(major, gcc, gxx, tree, system=False)
    if settings.compiler_mode == "system":
        log = paths.work_dir / "compilers" / "update-alternatives.log"
        tree = AlternativesTree(links_dir=Path("/usr/bin"), log=log, program=host.update_alternatives)
        return CompilerChoice(major, gcc, gxx, tree, system=True)
    tree = private_tree(paths.work_dir / "compilers" / f"gcc-{major}", host.update_alternatives)
    return CompilerChoice(major, gcc, gxx, tree, system=False)


def refusal(resolved: ResolvedBuild) -> SrcbuildError | None:
    """The error that stops this build before anything runs, or None.

    Compatibility rule errors come first (exit 3), then host errors (exit 4); ``--ignore-preflight``
    lets the build go on despite both.
    """
    if resolved.options.ignore_preflight:
        return None
    rule_errors = [f for f in resolved.rule_findings if f.severity is Severity.ERROR]
    host_errors = [f for f in resolved.host_findings if f.severity is Severity.ERROR]
    name = resolved.recipe.name
    if rule_errors:
        return IncompatibleError(
            f"recipe {name} breaks {len(rule_errors)} compatibility rule(s): {rule_errors[0].message}",
            rule_errors[0].fix or "change the recipe's pins (srcbuild recipes check shows every finding)",
        )
    if host_errors:
        return HostError(
            f"this machine cannot build recipe {name}: {host_errors[0].message}",
            host_errors[0].fix or "install what is missing (srcbuild doctor lists it)",
        )
    return None
