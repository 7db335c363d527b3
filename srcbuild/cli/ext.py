"""``srcbuild ext NAME[==VERSION] --recipe R``: build a PyTorch extension against one torch.

The wheel's path is the last line it prints. ``srcbuild plan ext NAME --recipe R`` prints the
same plan without running it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from srcbuild.cli.build import build_options, copy_wheel, options_from, output_dir_option
from srcbuild.cli.common import (
    F,
    command_environ,
    invocation,
    json_option,
    print_json,
    resolve_paths,
    resume_command,
)
from srcbuild.cli.mirror_dir import mirror_dir_option
from srcbuild.console import make_console, output_width, wrap_text
from srcbuild.errors import SrcbuildError, UsageError
from srcbuild.findings import Severity


def torch_options(func: F) -> F:
    """Which torch the extension builds against (default: the recipe's own wheel from the cache)."""
    func = click.option(
        "--torch", "torch_version", default=None,
        help="Build against this torch version (2.0.1, 2.13.0+cpu) fetched from the index pip is configured with.",
    )(func)
    return click.option(
        "--torch-wheel", default=None, type=click.Path(dir_okay=False),
        help="Build against this torch wheel file.",
    )(func)


CPU_RECIPE = "cpu"  # the catalog's CPU recipe: what an ext build against a +cpu torch takes by default


def recipe_for(kw: dict[str, Any]) -> str:
    """``--recipe``; without it, the catalog's CPU recipe for a ``+cpu`` torch (a CPU build needs
    no GPU's recipe); else a usage error."""
    if kw.get("recipe"):
        return str(kw["recipe"])
    torch = str(kw.get("torch_version") or Path(kw.get("torch_wheel") or "").name)
    if "+cpu" in torch:
        return CPU_RECIPE
    raise UsageError(
        "--recipe is needed: it names the GPUs (archs) and the CUDA to build the extension for",
        "srcbuild ext NAME==VERSION --recipe R (srcbuild recipes ls lists them); a CPU build against a +cpu "
        "torch needs none: --torch 2.13.0+cpu",
    )


def _prepare(requirement: str, kw: dict[str, Any]) -> Any:
    from srcbuild.ext.run import TorchRequest, prepare_ext
    from srcbuild.ext.source import parse_requirement
    from srcbuild.recipe import RecipeCatalog

    request = parse_requirement(requirement)
    paths = resolve_paths(kw["work_dir"], kw["cache_dir"])
    recipe = RecipeCatalog(paths).load(recipe_for(kw))
    wheel = Path(kw["torch_wheel"]) if kw.get("torch_wheel") else None
    torch = TorchRequest(wheel=wheel, version=kw.get("torch_version"))
    return prepare_ext(recipe, request, torch, options_from("torch", kw), paths, command_environ())


@click.command("ext")
@click.argument("requirement", metavar="NAME[==VERSION]|git+URL@REF", required=False)
@build_options
@mirror_dir_option(lambda kw: ())
@torch_options
@click.option("--all", "build_all", is_flag=True, help="Build every extension the recipe lists ([[extensions]]).")
@click.option("--resume", is_flag=True, help="Continue a failed or interrupted build at the step that stopped.")
@output_dir_option
@json_option
def ext_command(requirement: str | None, build_all: bool, resume: bool, as_json: bool, **kw: Any) -> int:
    """Build a PyTorch extension (torch-scatter, mmcv, ...) for a recipe's GPUs against one torch.

    The extension's sdist (or git source) is compiled with the recipe's toolchain and archs,
    verified and cached. The wheel's path is the last line (one line per extension with --all)."""
    from srcbuild.pipeline import read_ext_torch, run_ext
    from srcbuild.recipe import RecipeCatalog
    from srcbuild.toolchain.planned import Rerouted

    if build_all == (requirement is not None):
        raise UsageError(
            "name one extension, or pass --all for the recipe's [[extensions]]",
            "srcbuild ext torch-scatter==2.1.2 --recipe R, or srcbuild ext --all --recipe R",
        )
    if build_all:
        recipe = RecipeCatalog(resolve_paths(kw["work_dir"], kw["cache_dir"])).load(recipe_for(kw))
        if not recipe.extensions:
            raise UsageError(
                f"recipe {recipe.name} lists no extensions",
                'add [[extensions]] tables (name = "torch-scatter", version = "2.1.2") to '
                f"{recipe.path or recipe.name}",
            )
        wanted = [e.requirement for e in recipe.extensions]
    else:
        assert requirement is not None
        wanted = [requirement]
    console = make_console(stderr=as_json, progress=True)
    results = []
    for item in wanted:
        prepared = _prepare(item, kw)
        try:
            prepared = read_ext_torch(prepared, command_environ(), console)
            try:
                result = run_ext(prepared, command_environ(), console, resume=resume)
            except Rerouted as moved:  # another toolchain route made the prefix: plan again, once
                console.print(f"{moved.message}; planning the build again", markup=False, highlight=False)
                prepared = read_ext_torch(_prepare(item, kw), command_environ(), console)
                result = run_ext(prepared, command_environ(), console, resume=resume)
        except SrcbuildError as exc:  # "continue with" is this very command line, plus --resume
            argv = invocation()
            if argv and exc.hint:
                exc.hint = exc.hint.replace(prepared.plan.resume_command, resume_command(argv))
            raise
        wheel = result.wheel
        if wheel is None:
            raise UsageError(f"the build of {item} made no wheel", "read the build step's log")
        if kw.get("output_dir"):
            wheel = copy_wheel(wheel, Path(kw["output_dir"]))
        assert prepared.identity is not None  # read_ext_torch read it
        results.append({**result.to_json(), "fingerprint": prepared.fingerprint,
                        "torch": prepared.identity.to_json(),
                        **({"output": str(wheel)} if wheel != result.wheel else {})})
        if not as_json:
            click.echo(str(wheel))
    if as_json:
        print_json(results[0] if not build_all else {"extensions": results})
    return 0


for _param in ext_command.params:  # --recipe: optional here, a +cpu torch takes the CPU recipe (recipe_for)
    if _param.name == "recipe":
        _param.required = False


def plan_ext(requirement: str, fmt: str, kw: dict[str, Any]) -> int:
    """``srcbuild plan ext``: the findings, then the plan the build would run."""
    from srcbuild.ext.preflight import refusal
    from srcbuild.plan.render import render

    prepared = _prepare(requirement, kw)
    findings = prepared.findings
    shown = [f for f in findings if f.severity is not Severity.INFO]
    stop = refusal(findings, kw.get("ignore_preflight", False))
    if stop is not None:
        for finding in shown:
            click.echo(finding.render(), err=True)
        raise stop
    width = output_width(sys.stdout, command_environ())
    if shown and fmt == "text":
        sys.stdout.write(wrap_text("".join(f.render() + "\n" for f in shown) + "\n", width))
    fetch = prepared.build.fetch
    if prepared.torch_deferred and fetch is not None and fmt == "text":
        sys.stdout.write(wrap_text(
            f"torch: {fetch.filename} is not downloaded by plan: its CUDA version and kernels are read when the "
            "fetch-torch step has fetched it, and the preflight step checks them then; the cache key holds its "
            "sha256\n\n", width))
    sys.stdout.write(render(prepared.plan, fmt, width))
    return 0
