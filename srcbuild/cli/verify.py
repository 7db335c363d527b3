"""``srcbuild verify WHEEL`` and ``srcbuild smoke --recipe R``: render verification results.

Both commands only parse options, call ``srcbuild.verify`` and render the result as a table or
JSON; a failed verification raises ``VerificationFailed`` (exit 6) naming the first problem.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console

from srcbuild.capability import ComputeCapability
from srcbuild.cli.common import command_environ, json_option, print_json, resolve_paths
from srcbuild.console import SETTINGS as CONSOLE_SETTINGS
from srcbuild.console import Verbosity, make_console, print_lines, show_table, table
from srcbuild.errors import NotFoundError, UsageError, VerificationFailed
from srcbuild.findings import Severity
from srcbuild.packages import package_spec, pinned_packages
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.recipe.catalog import recipe_argument
from srcbuild.verify.cuobjdump import find_cuobjdump
from srcbuild.verify.ddp import BACKENDS, DEFAULT_PORT, DdpPlan, DdpRequest, DdpResult, free_port, run_ddp
from srcbuild.verify.kernels import generations_text, runs_on
from srcbuild.verify.mpi import probe_host_mpi
from srcbuild.verify.report import VerifyReport, no_kernels_text, verify_wheel
from srcbuild.verify.smoke import SmokeCheck, SmokeReport, find_python, is_root, plan_smoke, run_smoke

PROGRESS_FROM = 64 * 1024 * 1024  # wheels this large say what they read


def parse_archs(values: Sequence[str]) -> list[ComputeCapability]:
    """``--arch 3.0 --arch 3.5,3.7`` -> compute capabilities; a bad one is a usage error."""
    archs = []
    for value in values:
        for item in value.replace(";", ",").split(","):
            if not item.strip():
                continue
            try:
                archs.append(ComputeCapability.parse(item))
            except ValueError as exc:
                raise UsageError(f"--arch: {exc}", 'give compute capabilities like "--arch 3.5"') from None
    return archs


def load_recipe(name: Optional[str]) -> Optional[Recipe]:
    return RecipeCatalog(resolve_paths()).load(name) if name else None


def render_report(report: VerifyReport, console: Console, listing: bool = False) -> None:
    """The kernel table (with the GPUs each library runs on when ``listing``), the coverage rows,
    the platform tag and the findings."""
    wheel = report.wheel
    title = wheel.path.name + (f" (recipe {report.recipe})" if report.recipe else "")
    print_lines([f"wheel: {title}"], console)
    rows = report.table_rows()
    if rows:
        cross = any("cuobjdump" in r for r in rows)
        columns = ("library", "SASS", "PTX", *(("runs on",) if listing else ()), *(("cuobjdump",) if cross else ()))
        cells = (
            (
                r["library"],
                " ".join(r["sass"]),
                " ".join(r["ptx"]),
                *((generations_text(ccs),) if listing else ()),
                *((r.get("cuobjdump"),) if cross else ()),
            )
            for r, ccs in zip(rows, report.runs_on_rows())
        )
        show_table(table("CUDA kernels per library", columns, cells), console)
    else:
        print_lines([f"this wheel has no CUDA: {no_kernels_text(len(wheel.libraries))}"], console)
    if listing and rows:
        everywhere = [c.cc for c in runs_on(report.kernels, wheel.ptx_isa)]
        print_lines([f"the wheel runs on: {generations_text(everywhere)}"], console)
    if report.coverage:
        show_table(
            table(
                "Compute capabilities",
                ("compute capability", "runs", "via"),
                ((str(c.cc), "yes" if c.runs else "NO", c.via) for c in report.coverage),
            ),
            console,
        )
    lines = [*platform_lines(report.extra), *(finding.render() for finding in report.findings)]
    print_lines(lines, console)


def progress_printer(wheel: Path) -> Optional[Callable[[str, int, int], None]]:
    """For a wheel over ``PROGRESS_FROM`` bytes: one line on stderr per large library read."""
    if CONSOLE_SETTINGS.verbosity is Verbosity.QUIET or wheel.stat().st_size < PROGRESS_FROM:
        return None
    click.echo(f"reading the libraries of {wheel.name} ({wheel.stat().st_size >> 20} MiB)", err=True)

    def show(member: str, done: int, total: int) -> None:
        click.echo(f"  {done * 100 // max(total, 1):3d}%  {member}", err=True)

    return show


def platform_lines(extra: dict[str, Any]) -> list[str]:
    """The glibc the wheel needs, its platform tag, what keeps it from an older one and the
    libraries the machine must provide (``verify.report.glibc_facts``)."""
    from srcbuild.verify.manylinux import listed

    if not extra.get("glibc_needed"):
        return []
    lines = [f"needs glibc {extra['glibc_needed']} (symbol versions): platform tag {extra['manylinux']}"]
    if extra.get("manylinux_held_back_by"):
        lines.append(f"  not older because of {listed(extra['manylinux_held_back_by'])}")
    if extra.get("manylinux_unbundled"):
        lines.append(f"  not bundled, the machine provides them: {listed(extra['manylinux_unbundled'])}")
    return lines


def failure_of(report: VerifyReport) -> Optional[VerificationFailed]:
    """The error ``verify`` exits with (6), naming the first problem; None when there is none."""
    errors = report.errors
    if not errors:
        return None
    first = errors[0]
    others = len(errors) - 1
    more = f" (and {others} more problem{'s' if others > 1 else ''} above)" if others else ""
    return VerificationFailed(f"{report.wheel.path.name}: {first.message}{more}", first.fix or None)


@click.command("verify")
@click.argument("wheel", type=click.Path(dir_okay=False))
@click.option("--recipe", "recipe_name", default=None, help="Recipe the wheel was built from (name or file).")
@click.option(
    "--arch", "archs", multiple=True, help="Compute capability that must run (repeatable; default: the recipe's)."
)
@click.option(
    "--cuda-home",
    type=click.Path(file_okay=False),
    envvar="CUDA_HOME",
    default=None,
    help="CUDA toolkit whose cuobjdump cross-checks the parser [env CUDA_HOME; else cuobjdump on PATH].",
)
@click.option("--no-cross-check", is_flag=True, help="Do not run cuobjdump even when one is installed.")
@click.option(
    "--no-host-mpi",
    is_flag=True,
    help="Do not compare the recipe's MPI version with this host's (wheel built elsewhere).",
)
@json_option
def verify_command(
    wheel: str,
    recipe_name: Optional[str],
    archs: tuple[str, ...],
    cuda_home: Optional[str],
    no_cross_check: bool,
    no_host_mpi: bool,
    as_json: bool,
) -> int:
    """Check WHEEL without a GPU: CUDA kernels per compute capability, MPI, tags, CUDA runtime, version.

    With neither --recipe nor --arch, list the kernels of each library and the GPUs they run on."""
    wanted = parse_archs(archs)
    recipe = load_recipe(recipe_name)
    listing = recipe is None and not wanted  # no target: list what the wheel runs on
    path = Path(wheel)
    if path.is_file() and path.suffix == ".whl":
        progress = None if as_json else progress_printer(path)
    else:
        progress = None
    tool = None if no_cross_check else cross_checker(Path(cuda_home) if cuda_home else None, recipe)
    report = verify_wheel(wheel, recipe, wanted, probe_host=not no_host_mpi, cuobjdump=tool, progress=progress)
    failure = failure_of(report)
    if as_json:
        payload = report.to_json()
        if failure is not None:
            payload.update(error=failure.message, hint=failure.hint, exit_code=failure.exit_code)
        print_json(payload)
    else:
        console = make_console()
        render_report(report, console, listing=listing)
        if tool is None and not no_cross_check and report.kernels.sass | report.kernels.ptx:
            console.print(
                "cuobjdump: not found on PATH nor in a CUDA srcbuild provisioned (give --cuda-home, or "
                "srcbuild toolchain install cuda 11.8); cross-check skipped",
                highlight=False,
            )
    if failure is not None:
        raise failure
    if not as_json:
        warnings = sum(1 for f in report.findings if f.severity is Severity.WARNING)
        click.echo(f"verified: {Path(wheel).name}" + (f" ({warnings} warnings)" if warnings else ""))
    return 0


def cross_checker(cuda_home: Optional[Path], recipe: Optional[Recipe]) -> Optional[Path]:
    """The cuobjdump that cross-checks the parser: ``--cuda-home``'s (or CUDA_HOME's); else that of
    the recipe's CUDA as srcbuild provisioned it; else the one on PATH; else the oldest CUDA srcbuild
    provisioned (an old cuobjdump still reads Kepler and Maxwell code, which CUDA 13's refuses)."""
    if cuda_home is not None:
        return find_cuobjdump(cuda_home)
    from srcbuild.toolchain.store import ToolchainStore

    homes = []
    for entry in ToolchainStore(resolve_paths().toolchain_dir).entries():
        tool = entry.prefix / "bin" / "cuobjdump"
        if entry.name == "cuda" and tool.is_file():
            homes.append((tuple(int(p) for p in entry.version.split(".") if p.isdigit()), entry.version, tool))
    want = recipe.toolchain.cuda if recipe is not None else None
    for _, version, tool in homes:
        if want and (version == want or version.startswith(want + ".")):
            return tool
    on_path = find_cuobjdump(None)
    if on_path is not None:
        return on_path
    return min(homes)[2] if homes else None


def cached_wheel(recipe: Recipe, package: str) -> Path:
    """The wheel of ``package`` for ``recipe`` in the local cache (what `srcbuild torch` stored)."""
    from srcbuild.cache.install import find_wheel
    from srcbuild.cache.store import WheelCache
    from srcbuild.resolve.request import request_fingerprint

    environ = command_environ()
    fp = request_fingerprint(recipe, package, environ)
    found = find_wheel(WheelCache(resolve_paths().cache_dir), recipe, package, [], fp, environ=environ)
    if found is None:
        raise NotFoundError(
            f"smoke: no cached {package} wheel for recipe {recipe.name}",
            f"build it with `srcbuild {package} --recipe {recipe_argument(recipe, resolve_paths())}`, "
            "or pass --wheel PATH",
        )
    return found.entry.wheel_path


def ddp_request(
    smoke_args: tuple[str, ...],
    ddp: Optional[int],
    backend: str,
    nnodes: int,
    node_rank: int,
    master_addr: Optional[str],
    master_port: Optional[int],
) -> Optional[DdpRequest]:
    """The DDP part of ``smoke`` from its options (None without ``--ddp``)."""
    if ddp is None:
        if nnodes != 1 or node_rank or master_addr or master_port or backend != "auto":
            raise UsageError("smoke: the DDP options need --ddp N", "add --ddp 2 (processes on this node)")
        return None
    if nnodes > 1 and master_addr is None:
        raise UsageError(
            f"smoke --nnodes {nnodes}: every node must be told where node 0 is",
            f"add --master-addr ADDRESS_OF_NODE_0 --node-rank {node_rank}",
        )
    port = master_port if master_port is not None else (DEFAULT_PORT if nnodes > 1 else free_port())
    request = DdpRequest(ddp, backend, nnodes, node_rank, master_addr or "127.0.0.1", port, smoke_args=smoke_args)
    request.check()
    return request


def render_ddp(plan: DdpPlan) -> None:
    """Before the launch, on stderr: what the wheel has and the other nodes' commands."""
    for note in plan.notes:
        click.echo(note, err=True)
    if plan.other_nodes:
        click.echo(f"run on the other {len(plan.other_nodes)} node(s), each with the wheel:", err=True)
        for line in plan.other_nodes:
            click.echo(f"  {line}", err=True)


def render_smoke(report: SmokeReport, console: Console) -> None:
    title = f"smoke test of {report.recipe}" + ("" if report.gpu else " (no GPU)")
    checks = ((c.name, c.status, c.detail) for c in report.checks)
    show_table(table(title, ("check", "result", "detail"), checks), console)


def runtime_caveats(recipe: Recipe) -> list[str]:
    """What current torch cannot do on the recipe's oldest GPU (torch.compile below 7.0), said after the smoke test."""
    from srcbuild.knowledge import load_knowledge

    if not recipe.gpu.arch:
        return []
    oldest = min(recipe.gpu.arch)
    return [f"{c.message} (sm_{oldest.sm}): {c.advice}" for c in load_knowledge().runtime_caveats_for(oldest)]


def installed_env(
    env: str, wheel: Optional[str], torchvision_wheel: Optional[str], python: Optional[str], venv: Optional[str]
) -> Path:
    """``smoke --env ENV``: the environment whose torch is checked, refusing the install options."""
    given = [
        name
        for name, value in (
            ("--wheel", wheel),
            ("--torchvision-wheel", torchvision_wheel),
            ("--python", python),
            ("--venv", venv),
        )
        if value
    ]
    if given:
        raise UsageError(
            f"smoke --env {env}: checks the torch installed there, so {', '.join(given)} cannot be given with it",
            f"drop {', '.join(given)}, or drop --env to install a wheel into a throwaway venv",
        )
    path = Path(env).expanduser().resolve()
    if not (path / "bin" / "python").exists():
        raise UsageError(
            f"smoke --env {env}: {path / 'bin' / 'python'} does not exist (not a venv or conda prefix)",
            f"give the environment's prefix, or install a wheel into one: srcbuild install torch --recipe R "
            f"--into {env} --create",
        )
    return path


@click.command("smoke")
@click.option("--recipe", "recipe_name", required=True, help="Recipe the wheel was built from (name or file).")
@click.option("--wheel", "wheel", type=click.Path(dir_okay=False, exists=True), help="torch wheel (default: cached).")
@click.option(
    "--torchvision-wheel",
    type=click.Path(dir_okay=False, exists=True),
    help="torchvision wheel to test nms with (default with no --wheel: the cached one, if any).",
)
@click.option("--python", "python", default=None, help="Interpreter for the venv (default: python<toolchain.python>).")
@click.option(
    "--venv", "venv", type=click.Path(file_okay=False), help="Reuse/keep this venv instead of a throwaway one."
)
@click.option(
    "--env",
    "env",
    type=click.Path(file_okay=False),
    help="Check the torch already installed in this environment (a venv or conda prefix); "
    "nothing is installed or removed.",
)
@click.option("--ddp", "ddp", type=int, default=None, help="Then run DDP with N processes on this node.")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True, help="DDP backend.")
@click.option("--nnodes", type=int, default=1, show_default=True, help="DDP: number of nodes.")
@click.option("--node-rank", type=int, default=0, show_default=True, help="DDP: this node's rank.")
@click.option("--master-addr", default=None, help="DDP: address of node 0 (needed with --nnodes > 1).")
@click.option("--master-port", type=int, default=None, help="DDP: port on node 0 [default: 29500, one node: free].")
@json_option
def smoke_command(
    recipe_name: str,
    wheel: Optional[str],
    torchvision_wheel: Optional[str],
    python: Optional[str],
    venv: Optional[str],
    env: Optional[str],
    as_json: bool,
    **ddp_options: Any,
) -> int:
    """Install the wheel in a venv and run it: GPU checks when there is a GPU, CPU and MPI parts always;
    with --ddp N, then a DistributedDataParallel run of N processes (across nodes with --nnodes).
    With --env, check the torch installed in that environment instead."""
    recipe = load_recipe(recipe_name)
    assert recipe is not None
    paths = resolve_paths()
    given = ("--env", env) if env is not None else ("--wheel", wheel) if wheel else ()
    request = ddp_request(("--recipe", recipe_name, *given), **ddp_options)
    if env is not None:
        env_dir = installed_env(env, wheel, torchvision_wheel, python, venv)
        wheels: list[Path] = []
        interpreter = str(env_dir / "bin" / "python")
    else:
        wheels = [Path(wheel) if wheel else cached_wheel(recipe, "torch")]
        if torchvision_wheel:
            wheels.append(Path(torchvision_wheel))
        elif wheel is None:
            others = [p for p in pinned_packages(recipe) if package_spec(p).needs_torch_wheel]
            for package in others:  # the recipe's cached torchvision, torchaudio, when there is one
                with contextlib.suppress(UsageError):
                    wheels.append(cached_wheel(recipe, package))
        interpreter = find_python(recipe, python)
        env_dir = Path(venv) if venv else paths.envs_dir / f"smoke-{recipe.name}-{os.getpid()}"
    host_mpi = probe_host_mpi() if recipe.mpi.enabled else None
    mpirun = shutil.which("mpirun") if recipe.mpi.enabled else None
    plan = plan_smoke(
        recipe,
        wheels,
        interpreter,
        env_dir.resolve(),
        keep_venv=venv is not None or env is not None,
        mpirun=mpirun,
        openmpi=host_mpi is None or host_mpi.implementation == "openmpi",
        as_root=is_root(),
        installed=env is not None,
    )
    log = paths.logs_dir / f"smoke-{recipe.name}.log"
    ddp: list[DdpResult] = []

    def then() -> tuple[SmokeCheck, ...]:
        assert request is not None
        found = shutil.which("mpirun")
        args = (found, host_mpi is None or host_mpi.implementation == "openmpi", is_root(), render_ddp)
        ddp.append(run_ddp(recipe, request, env_dir.resolve(), command_environ(), log, sys.stderr, *args))
        return ddp[0].checks

    report = run_smoke(plan, command_environ(), log, echo=sys.stderr, then=then if request else None)
    caveats = runtime_caveats(recipe)
    if as_json:
        print_json({**report.to_json(), "caveats": caveats, **({"ddp": ddp[0].to_json()} if ddp else {})})
    else:
        render_smoke(report, make_console())
        for caveat in caveats:
            click.echo(f"caveat: {caveat}", err=True)
    failed = [c for c in report.checks if c.status == "fail"]
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise VerificationFailed(
            f"smoke test of {recipe.name}: {failed[0].name}: {failed[0].detail}{more}", f"see {log}"
        )
    if not as_json:
        click.echo(f"smoke test passed{'' if report.gpu else ' (CPU and MPI parts only: no GPU here)'}")
    return 0
