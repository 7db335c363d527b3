"""``srcbuild container build``: build a recipe's wheel in its devel image, into the host's cache.

Only option parsing and rendering; ``srcbuild.container.build`` decides and runs.
"""

from __future__ import annotations

import sys
from typing import Optional

import click

from srcbuild.cli.common import PackageChoice, command_environ, json_option, path_options, print_json, resolve_paths
from srcbuild.cli.mirror_dir import mirror_dir_option
from srcbuild.console import echo_text
from srcbuild.errors import UsageError
from srcbuild.offline import DIR_VAR as MIRROR_DIR_VAR
from srcbuild.packages import build_order, package_spec
from srcbuild.paths import Paths
from srcbuild.precedence import env_value
from srcbuild.recipe import RecipeCatalog


def doctor_containers(
    paths: Paths,
    as_json: bool,
    containers: bool,
    gpu_check: bool,
    recipe_name: Optional[str],
    oci_runtime: Optional[str],
) -> int:
    """``srcbuild doctor --containers``: always exits 0; problems are lines with their fix."""
    from srcbuild.container.doctor import assess, gather, render
    from srcbuild.container.images import choose_bases

    image = None
    if gpu_check:
        if recipe_name is None:
            raise UsageError("doctor --gpu-check: which image?", "add --recipe NAME (its CUDA image is used)")
        image = choose_bases(RecipeCatalog(paths).load(recipe_name)).runtime
    report = assess(gather(image, oci_runtime))
    if as_json:
        print_json(report.to_json())
    else:
        echo_text(render(report))
    return 0


@click.group("container")
def container_group() -> None:
    """Build wheels in containers (docker or podman)."""


@container_group.command("build")
@click.option("--recipe", "-r", "recipe_name", required=True, help="Recipe name from the catalog, or a .toml path.")
@click.option("--package", type=PackageChoice(), default="torch", show_default=True)
@click.option("--engine", type=click.Choice(("docker", "podman")), default=None, help="Default: docker, then podman.")
@click.option("--runtime", "oci_runtime", default=None, help="OCI runtime for the engine (runc, nvidia).")
@click.option("--base", default=None, help="Devel (and runtime) image instead of the data's; it holds the toolchain.")
@click.option("--image-tag", default=None, help="Also build a runtime image with only the wheel, tagged so.")
@click.option(
    "--mirror", "mirrors", multiple=True, help="Git mirrors, as `srcbuild torch --mirror` [env SRCBUILD_MIRROR]."
)
@click.option("--volume", "volumes", multiple=True, help="Mount SRC[:DST] into the build (local mirrors, toolkits).")
@click.option("--env", "env_prefix", default=None, help="Build environment prefix inside the container.")
@click.option("--cuda-home", default=None, help="CUDA toolkit inside the container.")
@click.option("--max-jobs", type=int, default=None, help="Parallel compile jobs inside the container.")
@mirror_dir_option(lambda kw: build_order(kw["package"]))
@path_options
@json_option
def build_command(
    recipe_name: str,
    package: str,
    engine: Optional[str],
    oci_runtime: Optional[str],
    base: Optional[str],
    image_tag: Optional[str],
    mirrors: tuple[str, ...],
    volumes: tuple[str, ...],
    env_prefix: Optional[str],
    cuda_home: Optional[str],
    max_jobs: Optional[int],
    work_dir: Optional[str],
    cache_dir: Optional[str],
    as_json: bool,
) -> int:
    """Build the recipe's devel image, run the build in it with the host's wheel cache mounted, and
    optionally build a runtime image with only the wheel. The wheel's host path is printed last."""
    from srcbuild.container.build import ContainerRequest, run_container_build
    from srcbuild.container.engine import find_engine

    paths = resolve_paths(work_dir, cache_dir)
    recipe = RecipeCatalog(paths).load(recipe_name)
    inside: list[str] = []
    for flag, value in (("--env", env_prefix), ("--cuda-home", cuda_home), ("--max-jobs", max_jobs)):
        if value is not None:
            inside += [flag, str(value)]
    mirror_dir = env_value(command_environ(), MIRROR_DIR_VAR)  # --mirror-dir: the build inside reads it too
    torch_fp = None
    if package_spec(package).needs_torch_wheel and image_tag:  # the runtime image installs torch's cached wheel too
        from srcbuild.resolve.request import request_fingerprint

        torch_fp = request_fingerprint(recipe, "torch", command_environ())
    request = ContainerRequest(
        recipe, package, base, image_tag, tuple(mirrors or ()), tuple(volumes), tuple(inside), mirror_dir, torch_fp
    )
    chosen = find_engine(engine, oci_runtime)
    log = paths.logs_dir / f"container-{recipe.name}.log"
    result = run_container_build(chosen, request, paths, command_environ(), log, echo=sys.stderr)
    if as_json:
        print_json({**result.to_json(), "engine": chosen.name, "log": str(log)})
    else:
        click.echo(f"devel image {result.devel_image} ({result.image_id[:19]}) with {chosen.name}")
        if result.runtime_image:
            click.echo(f"runtime image {result.runtime_image}")
        click.echo(str(result.wheel))
    return 0
