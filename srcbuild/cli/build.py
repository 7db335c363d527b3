"""``srcbuild torch``, ``srcbuild torchvision``, ``srcbuild torchaudio``: build a wheel (or take it
from the cache); one command per package of ``srcbuild.packages``, made by ``package_command``.

The options they share with ``srcbuild plan`` and ``srcbuild ext`` are here (``build_options``);
``srcbuild.cli.plan`` prints the plan these commands run. The wheel's path is the last line a
build prints.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from srcbuild.cli.common import (
    F,
    command_environ,
    complete_recipe,
    exact_hint,
    invocation,
    json_option,
    path_options,
    print_json,
    resolve_paths,
    resume_command,
)
from srcbuild.cli.mirror_dir import mirror_dir_option
from srcbuild.console import make_console
from srcbuild.errors import SrcbuildError
from srcbuild.packages import build_order, package_spec
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve import BuildOptions


def build_options(func: F) -> F:
    """The options ``plan`` and the build commands share."""
    decorators = [
        click.option(
            "--recipe",
            "-r",
            required=True,
            shell_complete=complete_recipe,
            help="Recipe name from the catalog, or a path to a .toml.",
        ),
        click.option(
            "--mirror",
            "mirrors",
            multiple=True,
            help="gitee, PREFIX=REPLACEMENT or a mirror map .toml (repeatable) [env SRCBUILD_MIRROR].",
        ),
        click.option("--env", "env_prefix", default=None, help="Build in this existing environment (a prefix)."),
        click.option(
            "--env-backend", default=None, help="How to create the build environment [env SRCBUILD_ENV_BACKEND]."
        ),
        click.option(
            "--max-jobs", type=int, default=None, help="Parallel compile jobs [env MAX_JOBS; default: from memory]."
        ),
        click.option(
            "--keep-build/--no-keep-build",
            default=None,
            help="Keep the build tree after a failure instead of running setup.py clean [env SRCBUILD_KEEP_BUILD].",
        ),
        click.option(
            "--system-alternatives",
            is_flag=True,
            help="Select gcc system-wide with update-alternatives (needs root; restored afterwards).",
        ),
        click.option(
            "--ignore-preflight",
            is_flag=True,
            help="Report compatibility and host errors but build anyway (at your own risk).",
        ),
        click.option(
            "--cuda-home", default=None, help="The CUDA toolkit to use [env SRCBUILD_CUDA_HOME; default: probed]."
        ),
        click.option(
            "--remote",
            "remotes",
            multiple=True,
            help="A shared cache to look in before building: directory, s3://bucket/prefix or http://host:port/ "
            "(repeatable) [env SRCBUILD_REMOTES].",
        ),
        click.option(
            "--no-provision",
            is_flag=True,
            help="Never fetch a toolchain (CUDA, cuDNN, gcc, MPI); stop and say what is missing instead.",
        ),
        click.option(
            "--portable/--no-portable",
            default=None,
            help="Build against conda-forge's glibc 2.17 sysroot with its conda gcc and tag the wheel "
            "manylinux_2_X, so pip on other distributions accepts it [recipe [build] portable, "
            "env SRCBUILD_PORTABLE].",
        ),
        click.option(
            "--trust-unsigned",
            is_flag=True,
            help="Accept remote cache entries that no trusted signer signed (the sha256 is still checked).",
        ),
        click.option(
            "--compiler-cache",
            type=click.Choice(["sccache", "ccache", "none"]),
            default=None,
            help="Compiler launcher [recipe [build] compiler_cache, env SRCBUILD_COMPILER_CACHE; "
            "default: sccache, else ccache, when installed].",
        ),
        click.option(
            "--compiler-cache-url",
            default=None,
            help="Shared compiler cache: s3://bucket/prefix or redis://host:port (credentials from the "
            "environment) [env SRCBUILD_COMPILER_CACHE_URL].",
        ),
        click.option(
            "--dist-scheduler",
            default=None,
            help="Send compile jobs to this sccache-dist scheduler, e.g. http://scheduler:10600 "
            "[env SRCBUILD_DIST_SCHEDULER; token in SRCBUILD_DIST_TOKEN].",
        ),
        click.option(
            "--accept-moved-tag",
            is_flag=True,
            help="The recipe pins no commit and the tag now names another commit than when first "
            "seen here: accept it and record it (otherwise refused, exit 7).",
        ),
        path_options,
    ]
    for deco in reversed(decorators):
        func = deco(func)
    return func


output_dir_option = click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Also copy the finished wheel into this directory (its path is then the last line).",
)


def options_from(package: str, kw: dict[str, Any]) -> BuildOptions:
    """The build options of ``package`` from the keyword arguments of ``build_options``."""
    return BuildOptions(
        package=package,
        mirrors=tuple(kw["mirrors"]),
        env_prefix=kw["env_prefix"],
        env_backend=kw["env_backend"],
        max_jobs=kw["max_jobs"],
        keep_build=kw["keep_build"],
        system_alternatives=kw["system_alternatives"],
        cuda_home=kw["cuda_home"],
        ignore_preflight=kw["ignore_preflight"],
        remotes=tuple(kw["remotes"]),
        trust_unsigned=bool(kw.get("trust_unsigned")),
        compiler_cache=kw.get("compiler_cache"),
        compiler_cache_url=kw.get("compiler_cache_url"),
        dist_scheduler=kw.get("dist_scheduler"),
        no_provision=bool(kw.get("no_provision")),
        portable=kw.get("portable"),
        canary=kw.get("canary") or "run",
        accept_moved_tag=bool(kw.get("accept_moved_tag")),
    )


def _run(package: str, resume: bool, as_json: bool, kw: dict[str, Any]) -> int:
    from srcbuild.pipeline import run_build

    paths = resolve_paths(kw["work_dir"], kw["cache_dir"])
    recipe = RecipeCatalog(paths).load(kw["recipe"])
    console = make_console(stderr=as_json, progress=True)  # the build's progress; -q silences it
    try:
        result = run_build(recipe, options_from(package, kw), paths, command_environ(), console, resume=resume)
    except SrcbuildError as exc:  # "continue with" is this very command line, plus --resume
        if invocation():
            argv = invocation()
            exc.hint = exact_hint(exc.hint, resume_command(argv), resume_command(argv, resume=False))
        raise
    wheel = result.wheel
    if wheel is None and kw.get("canary") == "only":  # --canary: stopped after it, on purpose
        if as_json:
            print_json(result.to_json())
        else:
            found = result.canary or {}
            click.echo(f"canary passed ({found.get('wall', 0):.0f} s wall, {found.get('cpu', 0):.0f} s CPU); "
                       "continue the build with the same command, --resume in place of --canary")
        return 0
    if kw.get("output_dir") and wheel is not None:
        wheel = copy_wheel(wheel, Path(kw["output_dir"]))
    if as_json:
        print_json({**result.to_json(), **({"output": str(wheel)} if wheel != result.wheel else {})})
    else:
        click.echo(str(wheel))
    return 0


def copy_wheel(wheel: Path, directory: Path) -> Path:
    """Copy the finished wheel into ``directory`` (a temporary name renamed into place).

    A wheel of a cache entry is hashed as it is copied and compared with its manifest's sha256:
    the copy that leaves the cache is the one its manifest vouches for (bit rot that kept the
    file's size and time is caught here), else CacheIntegrityError and no copy."""
    import hashlib

    from srcbuild.cache.manifest import MANIFEST_NAME, Manifest
    from srcbuild.errors import CacheIntegrityError

    expected = None
    if (wheel.parent / MANIFEST_NAME).is_file():
        manifest = Manifest.read(wheel.parent / MANIFEST_NAME)
        expected = manifest.sha256 if manifest.wheel == wheel.name else None
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / wheel.name
    tmp = directory / f".{wheel.name}.{os.getpid()}.tmp"
    digest = hashlib.sha256()
    try:
        with open(wheel, "rb") as fin, open(tmp, "wb") as fout:
            while chunk := fin.read(1 << 20):
                digest.update(chunk)
                fout.write(chunk)
        if expected is not None and digest.hexdigest() != expected:
            raise CacheIntegrityError(
                f"{wheel}: sha256 {digest.hexdigest()}, its manifest says {expected}; not copied to {directory}",
                "the cached wheel changed after it was stored: `srcbuild cache verify --remove` drops it, "
                "then build again",
            )
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def package_command(package: str) -> click.Command:
    """``srcbuild <package>``: build the package's wheel for a recipe (or take it from the cache),
    after the packages it is built against (``srcbuild.packages.build_order``); its help is the
    registry entry's summary."""
    spec = package_spec(package)

    def build(resume: bool, as_json: bool, **kw: Any) -> int:
        return _run(package, resume, as_json, kw)

    build.__doc__ = spec.summary
    command = json_option(build)
    command = output_dir_option(command)
    command = click.option(
        "--resume", is_flag=True, help="Continue a failed or interrupted build at the step that stopped."
    )(command)
    if spec.has_canary:  # srcbuild.plan.canary
        command = click.option(
            "--no-canary", "canary", flag_value="skip", help="Skip the canary (recorded in the build's record)."
        )(command)
        command = click.option(
            "--canary",
            "canary",
            flag_value="only",
            default=None,
            help="Stop after the canary (configure read back against the plan, a few CUDA units compiled per "
            "arch); exit 0 when it passes.",
        )(command)
    command = mirror_dir_option(lambda kw: build_order(package))(command)
    command = build_options(command)
    return click.command(package)(command)


__all__ = ["package_command", "print_json"]
