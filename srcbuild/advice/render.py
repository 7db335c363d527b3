"""Plain-text rendering of ``recommend`` and ``doctor`` results (``--json`` prints their ``to_json``)."""

from __future__ import annotations

from srcbuild.advice.doctor import AFTER_INSTALL, CANNOT, READY, DoctorReport
from srcbuild.advice.recommend import FITS, NEEDS_DRIVER, GpuAdvice, Recommendation
from srcbuild.advice.window import Window
from srcbuild.host.facts import GpuInfo
from srcbuild.host.jobs import GIB
from srcbuild.rules.host import MPI_LABELS

_STATUS = {FITS: "fits", NEEDS_DRIVER: "needs a newer driver", "no": "does not fit"}


def gpu_line(gpu: GpuInfo, count: int = 1) -> str:
    details = [d for d in (gpu.chip, f"pci {gpu.pci_id}" if gpu.pci_id else None) if d]
    times = f"{count} x " if count > 1 else ""
    extra = f" ({', '.join(details)})" if details else ""
    return f"{times}{gpu.name}{extra}, from {gpu.source}"


def window_lines(window: Window) -> list[str]:
    lines = [f"compute capability {window.cc} ({window.generation})"]
    if window.cuda:
        gcc = ", ".join(f"{g.cuda}: gcc <= {g.max_gcc}" for g in window.gcc)
        lines.append(f"CUDA that can target it: {window.cuda_range} (host gcc per CUDA: {gcc})")
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
            lines.append(
                f"newest torch reported to work on it: {window.reported_torch} (source: {window.reported_source})"
            )
    if window.official:
        w = window.official
        via = f", {w.driver_note}" if w.driver_note else ""
        lines.append(
            f"no build needed for torch {w.torch}: its official {w.cuda_tag} wheel has kernels for "
            f"compute capability {w.lowest_cc} and up{via}"
        )
    else:
        lines.append(f"no official torch wheel has kernels for {window.cc}: build from source")
    return lines


def advice_lines(advice: GpuAdvice) -> list[str]:
    lines = [f"GPU: {gpu_line(advice.gpu, advice.count)}"]
    if advice.window is None:
        if advice.gpu.candidates:
            lines.append(f"  the name {advice.gpu.name!r} is used by GPUs of different compute capabilities:")
            lines.extend(f"    {c}" for c in advice.gpu.candidates)
            lines.append("  give the PCI id (from `lspci -nn`) with --pci-id to choose")
        else:
            lines.append(
                "  compute capability unknown: not in the knowledge base (it knows NVIDIA GPUs from Fermi to Turing); "
                "if you know it, `srcbuild compat --arch X.Y` shows its window"
            )
        return lines
    lines.extend(f"  {line}" for line in window_lines(advice.window))
    best = advice.best
    if best is not None:
        lines.append(f"  recipe to use: {best.recipe} ({best.summary})")
    else:
        lines.append("  no catalog recipe fits this GPU")
    lines.append("  recipes, best first:")
    for fit in advice.recipes:
        status = _STATUS[fit.status] + (" through PTX only" if fit.status != "no" and not fit.native else "")
        lines.append(f"    {fit.recipe}: {status} ({fit.summary})")
        lines.extend(f"      - {reason}" for reason in fit.reasons)
    return lines


def render_recommendation(result: Recommendation) -> str:
    lines = [f"srcbuild recommend: {result.origin}"]
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
    host = report.host
    out = ["srcbuild doctor", "", "GPUs:"]
    out.extend(f"  {gpu_line(g)}" + (f": compute capability {g.cc}" if g.cc else "") for g in host.gpus)
    if not host.gpus:
        out.append("  none found")
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
        out.append(f"docker: {host.docker.path} (the daemon did not answer)")
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
