"""``srcbuild plan``: the plan ``srcbuild torch``/``torchvision``/``torchaudio`` (or ``srcbuild ext``) would run, as
text, JSON, a bash script or a Dockerfile, without running it.

The plan comes from ``srcbuild.pipeline.prepare``, the very function the build runs, so what is
shown is what runs; the execute stage is never imported.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from srcbuild.cli.build import build_options, options_from
from srcbuild.cli.common import PackageChoice, command_environ, json_option, resolve_paths
from srcbuild.cli.mirror_dir import mirror_dir_option
from srcbuild.console import echo_text, output_width, wrap_text
from srcbuild.errors import UsageError
from srcbuild.findings import Severity
from srcbuild.plan.render import FORMATS, render
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve import refusal


@click.command("plan")
@click.argument("package", type=PackageChoice(extra=("ext",)))
@click.argument("requirement", required=False, metavar="[NAME[==VERSION]]")
@build_options
@mirror_dir_option(lambda kw: ())
@click.option("--format", "fmt", type=click.Choice((*FORMATS, "dockerfile")), default="text", show_default=True)
@click.option("--torch", "torch_version", default=None, help="ext: build against this torch version from the index.")
@click.option("--torch-wheel", default=None, type=click.Path(dir_okay=False), help="ext: against this torch wheel.")
@json_option
def plan_command(package: str, requirement: str | None, fmt: str, as_json: bool, **kw: Any) -> int:
    """Print every step, command, directory and variable a build would run, without running it
    (``--format dockerfile``: a multi-stage Dockerfile that builds it in a container; ``--json``
    is ``--format json``). ``plan ext NAME --recipe R`` shows an extension build (``srcbuild ext``).

    The build is resolved first: what the build would refuse (compatibility rule errors, exit 3; a
    missing tool, exit 4) is refused here with the same words; warnings are printed above the plan.
    """
    from srcbuild.pipeline import prepare

    fmt = "json" if as_json else fmt
    if package == "ext" or requirement is not None:
        if package != "ext" or requirement is None or fmt == "dockerfile":
            raise UsageError(
                "plan ext takes the extension's name (and no --format dockerfile); a package (torch, ...) takes none",
                "run srcbuild plan ext NAME[==VERSION] --recipe R, or srcbuild plan torch --recipe R",
            )
        from srcbuild.cli.ext import plan_ext

        return plan_ext(requirement, fmt, kw)
    if not kw.get("recipe"):  # optional for ext alone (a +cpu torch takes the CPU recipe)
        raise UsageError("Missing option '--recipe' / '-r'.", f"srcbuild plan {package} --recipe R")
    paths = resolve_paths(kw["work_dir"], kw["cache_dir"])
    recipe = RecipeCatalog(paths).load(kw["recipe"])
    if fmt == "dockerfile":
        from srcbuild.container import dockerfile_for

        sys.stdout.write(dockerfile_for(recipe, package, tuple(kw["mirrors"])))
        return 0
    prepared = prepare(recipe, options_from(package, kw), paths, command_environ())
    shown = [f for f in prepared.resolved.findings if f.severity is not Severity.INFO]
    stop = refusal(prepared.resolved)
    if stop is not None:
        for finding in shown:
            echo_text(finding.render() + "\n", stderr=True)
        raise stop
    width = output_width(sys.stdout, command_environ())
    if shown and fmt == "text":  # the shell script carries them as comments, the JSON as "findings"
        sys.stdout.write(wrap_text("".join(f.render() + "\n" for f in shown) + "\n", width))
    sys.stdout.write(render(prepared.plan, fmt, width))
    return 0


__all__ = ["plan_command"]


for _param in plan_command.params:  # --recipe: checked in plan_command (plan ext of a +cpu torch needs none)
    if _param.name == "recipe":
        _param.required = False
