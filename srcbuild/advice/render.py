"""Plain-text rendering of ``recommend`` and ``doctor`` results (``--json`` prints their ``to_json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from srcbuild.advice.recommend import FITS, NEEDS_DRIVER, TELL_WHICH, GpuAdvice, Recommendation
from srcbuild.advice.window import Window
from srcbuild.host.facts import GpuInfo
from srcbuild.host.jobs import GIB

if TYPE_CHECKING:  # the doctor's report and host rules are imported by render_doctor: recommend needs neither
    from srcbuild.advice.doctor import DoctorReport

_STATUS = {FITS: "fits", NEEDS_DRIVER: "needs a newer driver", "no": "does not fit"}


def gpu_line(gpu: GpuInfo, count: int = 1) -> str:
    details = [d for d in (gpu.chip, f"pci {gpu.pci_id}" if gpu.pci_id else None) if d]
    times = f"{count} x " if count > 1 else ""
    extra = f" ({', '.join(details)})" if details else ""
    return f"{times}{gpu.name}{extra}, from {gpu.source}"


def answer_lines(advice: GpuAdvice) -> list[str]:
    """What to do first: the official wheel's pip command, or the recipe to build, or why neither."""
    lines: list[str] = []
    official, best = advice.official, advice.best
    if advice.lead == "wheel" and official is not None:
        via = f"; driver {official.driver_note}" if official.driver_note else ""
        lines.append(f"no build needed: {official.pip}")
        lines.append(
            f"  (official {official.cuda_tag} wheel of torch {official.torch}, SASS for {official.lowest_cc} and up"
            f"{official.sass_evidence}, "
            f"Python {official.python}{via})"
        )
        lines.extend(f"  caveat: {c}" for c in official.caveats)
        if advice.make_python is not None:
            lines.extend(f"  {line}" for line in advice.make_python.lines())
        if best is not None:
            newer = f"for torch {best.torch} (newer than the official wheel) build"
            lines.append(f"{newer}: {best.recipe} ({best.summary})")
        else:
            lines.append("build only for what the wheel lacks: MPI (recommend --mpi) or a newer torch")
    elif best is not None:
        why = "MPI asked for" if advice.want_mpi else "no official wheel has kernels for it"
        lines.append(f"build: {best.recipe} ({best.summary}); {why}")
        if official is not None and official.pip:
            lines.append(f"  without MPI, no build is needed: {official.pip}")
    elif advice.want_mpi:
        base = next((r.recipe for r in advice.recipes if r.mpi), None)
        lines.append("no catalog recipe builds torch with MPI for it")
        if base is not None and advice.window is not None:
            lines.append(
                f"  make one: srcbuild recipes new my-mpi --extends {base} "
                f'(then set arch = ["{advice.window.cc}"] in its [gpu] table)'
            )
        if official is not None and official.pip:
            lines.append(f"  without MPI, no build is needed: {official.pip}")
    else:
        lines.append("no official wheel and no catalog recipe fits it")
    return lines


def window_lines(window: Window) -> list[str]:
    lines = [f"compute capability {window.cc} ({window.generation})"]
    if window.cuda:
        first, last = window.gcc[0], window.gcc[-1]
        gcc = f"gcc <= {first.max_gcc} for {first.cuda}" + (
            f" ... <= {last.max_gcc} for {last.cuda}" if len(window.gcc) > 1 else ""
        )
        lines.append(f"CUDA that can target it: {window.cuda_range} ({gcc})")
    else:
        lines.append("CUDA that can target it: none in the knowledge base")
    if window.last_branch:
        runs = f", which runs CUDA up to {window.last_branch_cuda}" if window.last_branch_cuda else ""
        lines.append(f"last driver branch for it: R{window.last_branch}{runs}")
    if window.driver:
        runs = f" runs {window.driver_reach}" if window.driver_reach else ""
        lines.append(f"driver {window.driver}{runs}")
    if window.newest_torch:
        lines.append(
            f"newest torch its CUDA window allows: {window.newest_torch} (with CUDA {window.newest_torch_cuda})"
        )
    if window.reported_torch:
        lines.append(f"newest torch reported to work on it: {window.reported_torch} ({window.reported_source})")
    lines.extend(f"caveat: {c}" for c in window.runtime_caveats)
    return lines


def advice_lines(advice: GpuAdvice) -> list[str]:
    lines = [f"GPU: {gpu_line(advice.gpu, advice.count)}"]
    if advice.window is None:
        if advice.readings:
            lines.append(f"  the name {advice.gpu.name!r} is used by GPUs of different compute capabilities:")
            for reading in advice.readings:
                if reading.window is None:
                    continue
                head = f"    if it is the {reading.gpu.chip} one: compute capability {reading.window.cc}"
                lines.append(f"{head} ({reading.window.generation})")
                lines.extend(f"      {line}" for line in answer_lines(reading))
            lines.append(f"  to tell which, run: {TELL_WHICH}  (and pass it with --paste -)")
        else:
            lines.append(
                "  compute capability unknown; run: "
                "nvidia-smi --query-gpu=name,pci.device_id,compute_cap,driver_version --format=csv"
            )
            lines.append("  (if you know it, `srcbuild compat --arch X.Y` shows its window)")
        return lines
    lines.append(f"  compute capability {advice.window.cc} ({advice.window.generation})")
    lines.extend(f"  {line}" for line in answer_lines(advice))
    lines.extend(f"  {line}" for line in window_lines(advice.window)[1:])
    fitting = [f for f in advice.recipes if f.status != "no"]
    # beside a wheel, or when none fits, the recipes that do not fit are one line, not one each
    shown = fitting if advice.lead == "wheel" or not fitting else list(advice.recipes)
    if shown:
        lines.append("  recipes, best first:")
    for fit in shown:
        status = _STATUS[fit.status] + (" through PTX only" if fit.status != "no" and not fit.native else "")
        lines.append(f"    {fit.recipe}: {status} ({fit.summary})")
        lines.extend(f"      - {reason}" for reason in fit.reasons)
    hidden = len(advice.recipes) - len(shown)
    if hidden:
        lines.append(f"  {hidden} other recipes do not fit it (srcbuild compat --arch {advice.window.cc} says why)")
    return lines


def checked_line(checked: str, newest: str = "", seen: str = "", stale: str = "") -> str:
    """When the knowledge was last checked, the newest torch it holds and the newest release of each
    tracked project the index had then (so that staleness shows); a second line when it is stale."""
    known = f" (newest torch it knows: {newest})" if newest else ""
    text = f"knowledge last checked: {checked or 'unknown'}{known}"
    if seen:
        text += f"; newest on the index then: {seen}"
    return text + (f"\nwarning: {stale}" if stale else "")


def render_recommendation(result: Recommendation) -> str:
    checked = checked_line(result.checked, result.newest_known, result.newest_seen, result.stale)
    lines = [f"srcbuild recommend: {result.origin}", checked]
    if result.driver:
        lines.append(f"driver: {result.driver.version}, from {result.driver.source}")
    lines.extend(result.notes)
    for advice in result.gpus:
        lines.append("")
        lines.extend(advice_lines(advice))
    return "\n".join(lines) + "\n"


def _gib(value: int | None) -> str:
    return f"{value / GIB:.1f} GiB" if value is not None else "unknown"


def render_doctor(report: DoctorReport) -> str:
    from srcbuild.advice.doctor import AFTER_INSTALL, CANNOT, READY
    from srcbuild.rules.host import MPI_LABELS

    host = report.host
    checked = checked_line(report.checked, report.newest_known, report.newest_seen, report.stale)
    out = ["srcbuild doctor", checked, "", "GPUs:"]
    out.extend(f"  {gpu_line(g)}" + (f": compute capability {g.cc}" if g.cc else "") for g in host.gpus)
    if not host.gpus:
        out.append("  none found")
    for advice in report.gpus:
        if advice.window is not None:
            out.extend(f"  {line}" for line in answer_lines(advice))
    out.append("Driver:")
    if host.driver:
        line = f"  {host.driver.version}, from {host.driver.source}"
        if report.driver_reach:
            line += f"; runs {report.driver_reach}"
        out.append(line)
        out.extend(f"  {note}" for note in report.driver_notes)
    else:
        out.append("  none found")
    out.append("CUDA toolkits:")
    out.extend(f"  {t.version} in {t.home} (nvcc {t.nvcc}, found via {t.source})" for t in host.cuda_toolkits)
    if not host.cuda_toolkits:
        out.append("  none found")
    out.append("cuDNN: " + (", ".join(f"{c.version} ({c.header})" for c in host.cudnn) or "none found"))
    out.append("NCCL: " + (", ".join(f"{c.version} ({c.header})" for c in host.nccl) or "none found"))
    out.append("gcc:")
    for gcc in host.gccs:
        hosts = report.gcc_hosts.get(gcc.major, "")
        out.append(
            f"  {gcc.version} ({gcc.path}): {('host compiler for CUDA ' + hosts) if hosts else 'no CUDA accepts it'}"
        )
    if not host.gccs:
        out.append("  none found")
    labels_mpi = (
        f"{MPI_LABELS.get(m.implementation, m.implementation)} {m.version} ({m.mpicc or m.source})" for m in host.mpi
    )
    out.append("MPI: " + (", ".join(labels_mpi) or "none found"))
    out.append("conda/mamba/micromamba: " + (", ".join(f"{n} ({p})" for n, p in host.conda) or "none found"))
    if host.docker is None:
        out.append("docker: none found")
    elif host.docker.runtimes is None:
        why = "no daemon to reach" if host.docker.unreachable else "the daemon did not answer"
        out.append(f"docker: {host.docker.path} ({why})")
    else:
        nvidia = "with" if host.docker.nvidia_runtime else "without"
        out.append(
            f"docker: {host.docker.path}, {nvidia} the NVIDIA runtime (runtimes: {', '.join(host.docker.runtimes)})"
        )
    res = host.resources
    if res is not None:
        out.append(
            f"Resources: {res.cores} cores, {_gib(res.memory_bytes)} memory, "
            f"{_gib(res.disk_free_bytes)} free in {res.work_dir}"
        )
        out.append(f"MAX_JOBS: {report.jobs} ({report.jobs_reason})")
    out.append("")
    out.append("Recipes:")
    labels = {READY: "can build here now", AFTER_INSTALL: "can build after installing", CANNOT: "cannot build"}
    for verdict in report.verdicts:
        if verdict.status == AFTER_INSTALL:
            pieces = [r[len("needs ") :] for r in verdict.reasons if r.startswith("needs ")]
            others = [r for r in verdict.reasons if not r.startswith("needs ")]
            out.append(f"  {verdict.recipe}: {labels[verdict.status]} {', '.join(pieces)}")
            out.extend(f"    - {reason}" for reason in others)
            continue
        out.append(f"  {verdict.recipe}: {labels[verdict.status]}")
        out.extend(f"    - {reason}" for reason in verdict.reasons)
    if report.installs:
        out.append("")
        out.append("How to get what is missing:")
        for what, how in report.installs:
            out.append(f"  {what}: {how}")
    if host.missing:
        out.append("")
        out.append("Not found:")
        out.extend(f"  {line}" for line in host.missing)
    return "\n".join(out) + "\n"
