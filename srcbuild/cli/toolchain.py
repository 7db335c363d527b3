"""``srcbuild toolchain``: list, provision, remove and clean the toolchains srcbuild fetches itself."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from srcbuild.cli.common import command_environ, json_option, path_options, print_json, resolve_paths
from srcbuild.cli.mirror_dir import mirror_dir_option
from srcbuild.console import echo_text, print_table
from srcbuild.errors import HostError, UsageError
from srcbuild.files import human_size
from srcbuild.paths import Paths
from srcbuild.toolchain.download import MIRROR_VAR
from srcbuild.toolchain.providers.base import TOOLS, Request
from srcbuild.toolchain.provision import Outcome, provision
from srcbuild.toolchain.session import Session, open_session

TOOL_NAMES = TOOLS  # magma's VERSION is the CUDA release it is built for: `install magma 11.8`


@click.group("toolchain")
def toolchain_group() -> None:
    """CUDA toolkits, cuDNN, gcc, MPI and NCCL that srcbuild provisions into private prefixes."""


@toolchain_group.command("ls")
@path_options
@json_option
def ls_command(work_dir: str | None, cache_dir: str | None, as_json: bool) -> int:
    """The provisioned toolchains."""
    session = open_session(resolve_paths(work_dir, cache_dir), environ=command_environ())
    entries = session.store.entries()
    if as_json:
        print_json({"toolchain_dir": str(session.store.root), "toolchains": [e.to_json() for e in entries]})
        return 0
    if not entries:
        echo_text(f"no toolchains provisioned in {session.store.root}\n")
        return 0
    print_table(
        None,
        ("name", "version", "provider", "size", "prefix"),
        ((e.name, e.version, e.provider, human_size(e.size), e.prefix.name) for e in entries),
    )
    for entry in entries:
        if "sass" in entry.facts:  # cuDNN and NCCL: the kernels read from their libraries
            ptx = entry.facts.get("ptx", "")
            sass = entry.facts["sass"].replace(",", ", ") or "none"
            also = f"; PTX {ptx.replace(',', ', ')}" if ptx else ""
            echo_text(f"{entry.name} {entry.version} ({entry.provider}) kernels: SASS {sass}{also}\n")
    echo_text(f"in {session.store.root}\n")
    return 0


def _cuda_home(session: Session, version: str | None) -> Path | None:
    if not version:
        return None
    found = session.store.find("cuda", version)
    if found is not None:
        return found.prefix
    from srcbuild.host.toolchain import find_cuda

    toolkit = find_cuda(version, command_environ())
    return toolkit.home if toolkit else None


def _report(outcome: Outcome, seconds: float) -> str:
    t = outcome.toolchain
    how = "already provisioned" if outcome.reused else f"provisioned in {seconds:.1f} s"
    return f"{t.name} {t.version} ({t.provider}, {human_size(t.size)}): {how} at {t.prefix}"


@toolchain_group.command("install")
@click.argument("tool", required=False, type=click.Choice(TOOL_NAMES))
@click.argument("version", required=False)
@click.option("--from", "provider", help="The provider to use: redist, runfile, debian, pypi, nvidia, conda, source.")
@click.option("--cuda", "cuda", help="The CUDA version cuDNN or NCCL is for (e.g. 9.2).")
@click.option("--mpi", "flavour", default="openmpi", show_default=True, help="openmpi or mpich, for `mpi`.")
@click.option(
    "--arch",
    "archs",
    multiple=True,
    help="A compute capability cuDNN or NCCL must run on (NCCL from source is built for it; repeat).",
)
@click.option(
    "--sysroot",
    "sysroot",
    help="For `gcc --from conda`: install conda-forge's sysroot_linux-64 of this glibc beside it.",
)
@click.option("--recipe", "recipe_name", help="Provision everything this recipe pins that the host lacks.")
@click.option(
    "--portable/--no-portable",
    default=None,
    help="With --recipe: the toolchain of a portable build (the conda gcc with its sysroot) "
    "[default: the recipe's setting, env SRCBUILD_PORTABLE].",
)
@click.option("--offline", is_flag=True, help="Use only what is already provisioned or downloaded.")
@click.option("--mirror", help=f"Base URL of a mirror of NVIDIA's downloads [env {MIRROR_VAR}].")
@mirror_dir_option(lambda kw: ())
@path_options
@json_option
def install_command(
    tool: str | None,
    version: str | None,
    provider: str | None,
    cuda: str | None,
    flavour: str,
    archs: tuple[str, ...],
    sysroot: str | None,
    recipe_name: str | None,
    portable: bool | None,
    offline: bool,
    mirror: str | None,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Provision TOOL VERSION (e.g. `cuda 11.8`), or with --recipe everything a recipe needs."""
    check_install_arguments(tool, version, cuda, flavour, archs, sysroot)  # before anything is fetched
    paths = resolve_paths(work_dir, cache_dir)
    session = open_session(paths, offline=offline, mirror=mirror, environ=command_environ())
    if recipe_name:
        if tool:
            raise UsageError(
                "give either TOOL VERSION or --recipe, not both", f"srcbuild toolchain install --recipe {recipe_name}"
            )
        requests = _recipe_requests(session, paths, recipe_name, portable)
    elif portable is not None:
        raise UsageError("--portable is for --recipe", "srcbuild toolchain install gcc 11 --from conda --sysroot 2.17")
    elif tool and version:
        if sysroot and tool != "gcc":
            raise UsageError(
                f"--sysroot is for gcc, not {tool}",
                f"srcbuild toolchain install gcc 11 --from conda --sysroot {sysroot}",
            )
        flavour_of = flavour if tool == "mpi" else None
        requests = [Request(tool, version, cuda=cuda, flavour=flavour_of, archs=archs, sysroot=sysroot)]
    else:
        raise UsageError("say what to provision", "srcbuild toolchain install cuda 11.8")
    results = []
    for request in requests:
        if request.tool in ("cudnn", "nccl") and not request.cuda:
            raise UsageError(
                f"{request.label}: say which CUDA it is for",
                f"srcbuild toolchain install {request.tool} {request.version} --cuda 11.8",
            )
        home = _cuda_home(session, request.cuda) if request.tool == "nccl" else None
        use = session.with_home("cuda", home) if home is not None else session
        started = time.monotonic()
        outcome = provision(request, use.facts, use.store, use.ctx, provider, use.prefer, use.reach)
        results.append(outcome)
        if not as_json:
            click.echo(_report(outcome, time.monotonic() - started))
    if as_json:
        print_json([{**o.toolchain.to_json(), "reused": o.reused} for o in results])
    elif not results:
        click.echo("nothing to provision: the host has every tool the recipe pins")
    return 0


_VERSION_RE = re.compile(r"[0-9]{1,4}(\.[0-9]{1,6}){0,3}(-[0-9]{1,4})?")  # 11.8, 2.9.9, 8.5.0.96, 2.18.5-1
_GLIBC_RE = re.compile(r"2\.[0-9]{1,3}")


def check_install_arguments(
    tool: str | None,
    version: str | None,
    cuda: str | None,
    flavour: str,
    archs: tuple[str, ...],
    sysroot: str | None,
) -> None:
    """Every argument of ``toolchain install`` checked before a byte is downloaded: a typo found
    after a 557 MB download (``--arch 3.O``) wastes the download and must not leave a prefix."""
    from srcbuild.capability import ComputeCapability
    from srcbuild.recipe.schema import CUDA_RE

    samples = {"cuda": "11.8", "cudnn": "8.5 --cuda 11.8", "nccl": "2.9.9 --cuda 9.2", "gcc": "11", "mpi": "4.1"}
    example = f"srcbuild toolchain install {tool or 'cudnn'} {samples.get(tool or 'cudnn', '11.8')}"
    if version is not None and not _VERSION_RE.fullmatch(version):
        raise UsageError(f"VERSION: {version!r} is not a version (digits and dots, like 11.8 or 2.9.9)", example)
    if cuda is not None and not CUDA_RE.fullmatch(cuda):
        raise UsageError(f"--cuda: {cuda!r} is not a CUDA version (like 11.8)", example)
    for arch in archs:
        try:
            ComputeCapability.parse(arch)
        except ValueError as exc:
            raise UsageError(f"--arch: {exc}", f"{example} --arch 3.7") from None  # every arch is checked
    if flavour not in ("openmpi", "mpich"):
        raise UsageError(
            f"--mpi: {flavour!r} is not openmpi or mpich", "srcbuild toolchain install mpi 4.1 --mpi openmpi"
        )
    if sysroot is not None and not _GLIBC_RE.fullmatch(sysroot):
        raise UsageError(
            f"--sysroot: {sysroot!r} is not a glibc version (like 2.17)",
            "srcbuild toolchain install gcc 11 --from conda --sysroot 2.17",
        )


def _recipe_requests(session: Session, paths: Paths, recipe_name: str, portable: bool | None) -> list[Request]:
    from srcbuild.host import probe_host
    from srcbuild.recipe import RecipeCatalog
    from srcbuild.resolve.portable import recipe_sysroot
    from srcbuild.toolchain.homes import provisioned_dirs
    from srcbuild.toolchain.needs import needs_for

    recipe = RecipeCatalog(paths).load(recipe_name)
    environ = command_environ()
    host = probe_host(work_dir=paths.work_dir, toolchain_only=True, environ=environ, provisioned=provisioned_dirs)
    sysroot = recipe_sysroot(recipe, environ, portable)
    needs = needs_for(recipe, host, session.store, session.facts, session.prefer, sysroot, session.reach)
    missing = [n for n in needs if n.status == "missing"]
    if missing:
        raise HostError(missing[0].why, "srcbuild doctor")
    return [n.request for n in needs if n.status == "fetch"]


@toolchain_group.command("rm")
@click.argument("name", type=click.Choice((*TOOL_NAMES, "openmpi", "mpich")))
@click.argument("version")
@click.option("--from", "provider", help="Remove only the prefix of this provider.")
@path_options
def rm_command(name: str, version: str, provider: str | None, work_dir: str | None, cache_dir: str | None) -> int:
    """Remove a provisioned toolchain (every provider's prefix of it unless --from)."""
    session = open_session(resolve_paths(work_dir, cache_dir), environ=command_environ())
    if name == "magma" and not version.startswith("cuda"):  # `rm magma 11.8`, as it was installed
        version = Request("magma", version).store_version
    removed = session.store.remove(name, version, provider)
    if not removed:
        raise UsageError(f"no provisioned {name} {version} in {session.store.root}", "srcbuild toolchain ls")
    for path in removed:
        click.echo(f"removed {path}")
    return 0


@toolchain_group.command("gc")
@path_options
def gc_command(work_dir: str | None, cache_dir: str | None) -> int:
    """Remove half-made prefixes, abandoned temp dirs and partial downloads."""
    session = open_session(resolve_paths(work_dir, cache_dir), environ=command_environ())
    report = session.store.gc()
    for path in report.removed:
        click.echo(f"removed {path}")
    click.echo(f"freed {human_size(report.freed)}")
    return 0
