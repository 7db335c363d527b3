"""``srcbuild doctor`` (this machine's facts and a verdict per recipe) and ``srcbuild recommend``.

Both never fail because a tool is missing: a missing tool is a line in the report. ``recommend``
reads this machine by default, or another machine described by ``--gpu``, ``--pci-id``,
``--driver``, or that machine's pasted output: ``--paste FILE`` (any format ``srcbuild.host.parsers``
reads, found by itself), ``--lspci FILE`` or ``--nvidia-smi FILE``; ``-`` reads standard input.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from srcbuild import proc
from srcbuild.cli.common import F, command_environ, json_option, path_options, print_json, resolve_paths
from srcbuild.console import echo_text
from srcbuild.errors import UsageError
from srcbuild.patterns import LazyPattern

if TYPE_CHECKING:
    from srcbuild.host.facts import DriverInfo, GpuInfo
    from srcbuild.host.parsers import Parser
    from srcbuild.recipe import Recipe

_PCI_RE = LazyPattern(r"^(?:(?:0x)?10de:)?(?:0x)?([0-9a-fA-F]{4})\Z")
_DRIVER_RE = LazyPattern(r"^\d{3}(?:\.\d+){0,2}\Z")


def containers_options(func: F) -> F:
    """The options ``srcbuild doctor`` takes for its container checks."""
    func = click.option("--runtime", "oci_runtime", default=None, help="With --containers: OCI runtime (runc).")(func)
    func = click.option("--recipe", "recipe_name", default=None, help="With --gpu-check: use this recipe's image.")(
        func
    )
    func = click.option(
        "--gpu-check", is_flag=True, help="With --containers: run nvidia-smi in a container with the GPUs."
    )(func)
    return click.option(
        "--containers", is_flag=True, help="Check docker/podman, the NVIDIA container toolkit and shared memory."
    )(func)


@click.command("doctor")
@path_options
@containers_options
@json_option
def doctor_command(work_dir: str | None, cache_dir: str | None, as_json: bool, **containers: Any) -> int:
    """What this machine has for building PyTorch, and which catalog recipes can build here."""
    paths = resolve_paths(work_dir, cache_dir)
    if containers["containers"]:
        from srcbuild.cli.container import doctor_containers

        return doctor_containers(paths, as_json, **containers)
    environ = command_environ()
    from srcbuild.host import probe_host
    from srcbuild.toolchain.homes import provisioned_dirs

    # the probes mostly wait on programs (nvidia-smi, lspci, nvcc, gcc, mpicc, docker): they run while
    # what judges their answers is imported and the catalog is read
    probing = proc.Background(
        lambda: probe_host(work_dir=paths.work_dir, environ=environ, provisioned=provisioned_dirs)
    )
    from srcbuild.advice.doctor import diagnose
    from srcbuild.advice.render import render_doctor
    from srcbuild.envs.runtime import active_pythons, pythons_here
    from srcbuild.knowledge import load_knowledge
    from srcbuild.recipe import RecipeCatalog
    from srcbuild.resolve.portable import recipe_sysroot
    from srcbuild.toolchain.report import toolchain_report
    from srcbuild.toolchain.session import open_session

    recipes = RecipeCatalog(paths).load_all()
    host = probing.result()
    report = diagnose(
        load_knowledge(), host, recipes, paths, pythons_here(environ.get("PATH")), active_pythons(environ)
    )

    def sysroot_of(recipe: Recipe) -> str | None:
        return recipe_sysroot(recipe, environ)

    toolchains = toolchain_report(open_session(paths, environ=environ), host, recipes, sysroot_of)
    if as_json:
        print_json({**report.to_json(), "toolchains": toolchains.to_json()})
    else:
        echo_text(render_doctor(report) + toolchains.render())
    return 0


MAX_PASTE_BYTES = 1024 * 1024  # lspci and nvidia-smi of the biggest machine are a few KiB


def _read(path: str, option: str) -> str:
    try:
        if path == "-":
            raw = getattr(sys.stdin, "buffer", None)  # a text stream without one (a test's) is read as text
            data = raw.read(MAX_PASTE_BYTES + 1) if raw is not None else sys.stdin.read(MAX_PASTE_BYTES + 1).encode()
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_PASTE_BYTES + 1)
    except OSError as exc:
        raise UsageError(
            f"{option} {path}: cannot read it ({exc.strerror})", f"pass a file holding the output of {option[2:]}"
        ) from None
    if len(data) > MAX_PASTE_BYTES:
        name = "standard input" if path == "-" else path
        raise UsageError(
            f"{option} {name}: more than {MAX_PASTE_BYTES // 1024} KiB; what lspci or nvidia-smi print on one "
            "machine is a few KiB",
            "paste the output of one command on one machine: "
            "lspci -nn | grep -i nvidia | srcbuild recommend --paste -",
        )
    return data.decode("utf-8", errors="replace")


def _pci_id(text: str) -> int:
    m = _PCI_RE.match(text.strip())
    if not m:
        raise UsageError(
            f"--pci-id {text}: not an NVIDIA PCI id", "write it as lspci -nn shows it, e.g. 10de:0fe4 (vendor:device)"
        )
    return int(m.group(1), 16)


@click.command("recommend")
@click.option("--gpu", "gpu_name", help='A GPU by name, e.g. "GeForce GT 750M".')
@click.option("--pci-id", help="A GPU by PCI id, as `lspci -nn` shows it, e.g. 10de:0fe4.")
@click.option("--driver", help="The NVIDIA driver version of that machine, e.g. 470.82.")
@click.option(
    "--paste",
    "paste_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="A file (or - for stdin) with what lspci, nvidia-smi or /proc/driver/nvidia show; the format is detected.",
)
@click.option(
    "--lspci", "lspci_file", type=click.Path(dir_okay=False, allow_dash=True), help="A file (or -) with lspci output."
)
@click.option(
    "--nvidia-smi",
    "smi_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="A file (or -) with nvidia-smi output (the table, -L, or a --query-gpu CSV).",
)
@click.option(
    "--proc-driver-version",
    "proc_file",
    type=click.Path(dir_okay=False),
    help="A file with the content of /proc/driver/nvidia/version.",
)
@click.option("--mpi", "want_mpi", is_flag=True, help="Recommend a build with MPI (official wheels have none).")
@path_options
@json_option
def recommend_command(
    gpu_name: str | None,
    pci_id: str | None,
    driver: str | None,
    paste_file: str | None,
    lspci_file: str | None,
    smi_file: str | None,
    proc_file: str | None,
    want_mpi: bool,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Which catalog recipe to build for a GPU (this machine's, or one described by the options)."""
    from srcbuild.advice.recommend import recommend
    from srcbuild.advice.render import render_recommendation
    from srcbuild.envs.runtime import active_pythons, pythons_here
    from srcbuild.host.facts import DriverInfo
    from srcbuild.host.identify import identify_name, identify_pci, read_gpus
    from srcbuild.host.parsers import ALL_PARSERS, LSPCI_PARSERS, PROC_PARSERS, SMI_PARSERS, parse_proc_driver_version
    from srcbuild.knowledge import load_knowledge
    from srcbuild.recipe import RecipeCatalog

    paths = resolve_paths(work_dir, cache_dir)
    kb = load_knowledge()
    gpus: list[GpuInfo] = []
    driver_info: DriverInfo | None = None
    origin: list[str] = []
    notes: list[str] = []
    best_rank: int | None = None
    pastes: tuple[tuple[str, str | None, tuple[Parser, ...], str], ...] = (
        ("--paste", paste_file, (*ALL_PARSERS,), "lspci, nvidia-smi or /proc/driver/nvidia output"),
        ("--nvidia-smi", smi_file, (*SMI_PARSERS, *PROC_PARSERS), "nvidia-smi output"),
        ("--lspci", lspci_file, LSPCI_PARSERS, "lspci output"),
    )
    for option, path, parsers, what in pastes:
        if not path:
            continue
        name = "standard input" if path == "-" else path
        reading = read_gpus(kb, _read(path, option), name, parsers, what)
        if best_rank is None or reading.rank < best_rank:  # the paste that tells most names the GPUs
            gpus, best_rank = list(reading.gpus), reading.rank
        driver_info = driver_info or reading.driver
        notes.extend(n for n in reading.notes if n not in notes)
        origin.append(f"{option} {path}")
    if pci_id:
        gpus.append(identify_pci(kb, _pci_id(pci_id), "--pci-id"))
        origin.append(f"--pci-id {pci_id}")
    if gpu_name:
        typed = identify_name(kb, gpu_name, "--gpu")
        if typed.cc is None and not typed.candidates:  # a typo, as `compat --gpu` says (exit 2)
            from srcbuild.cli.compat import unknown_gpu_error  # its tables and rich: for this error only

            raise unknown_gpu_error(kb, gpu_name)
        gpus.append(typed)
        origin.append(f"--gpu {gpu_name!r}")
    if proc_file:
        version = parse_proc_driver_version(_read(proc_file, "--proc-driver-version"))
        if version:
            driver_info = DriverInfo(version, f"{proc_file}")
        origin.append(f"--proc-driver-version {proc_file}")
    if driver:
        if not _DRIVER_RE.match(driver.strip()):
            raise UsageError(f"--driver {driver}: not an NVIDIA driver version", "write it like 470.82 or 470.82.01")
        driver_info = DriverInfo(driver.strip(), "--driver")
        origin.append(f"--driver {driver}")
    if not origin:  # the probes of this machine: only when no other machine is described
        from srcbuild.host import probe_host
        from srcbuild.toolchain.homes import provisioned_dirs

        host = probe_host(work_dir=paths.work_dir, environ=command_environ(), provisioned=provisioned_dirs)
        gpus, driver_info = list(host.gpus), host.driver
        origin.append("this machine")
    recipes = RecipeCatalog(paths).load_all()
    here = pythons_here(command_environ().get("PATH"))
    active = active_pythons(command_environ())
    result = recommend(kb, gpus, driver_info, recipes, ", ".join(origin), want_mpi, notes, here, active)
    if as_json:
        print_json(result.to_json())
    else:
        echo_text(render_recommendation(result))
    return 0
