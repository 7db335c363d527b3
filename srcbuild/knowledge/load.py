"""Reading the knowledge data files (``srcbuild/knowledge/data/*.toml``) into rows.

The files ship inside the package. A malformed row is a bug in srcbuild, reported with the file and
the row so it is fixed at the source; users never edit these files.
"""

from __future__ import annotations

import re
from typing import Any

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge.model import (
    ArchSupport,
    ArchTargets,
    Breakage,
    CudaPatch,
    CudaRelease,
    CudnnRelease,
    DriverBranch,
    DriverLimit,
    GccCaveat,
    GpuChip,
    PipCommand,
    RuntimeCaveat,
    ToolFloor,
    WheelCaveat,
)
from srcbuild.knowledge.versions import parse, try_parse


class KnowledgeDataError(Exception):
    """A data file breaks its own format (a srcbuild bug, not a user error)."""


def _cc(row: dict[str, Any], key: str, where: str) -> ComputeCapability:
    try:
        return ComputeCapability.parse(str(row[key]))
    except (KeyError, ValueError) as exc:
        raise KnowledgeDataError(f"{where}: bad or missing {key!r}: {exc}") from exc


def _req(row: dict[str, Any], key: str, where: str) -> Any:
    if key not in row:
        raise KnowledgeDataError(f"{where}: missing {key!r}")
    return row[key]


def _version(row: dict[str, Any], key: str, where: str) -> str:
    value = str(_req(row, key, where))
    if try_parse(value) is None:
        raise KnowledgeDataError(f"{where}: {key} = {value!r} is not a version")
    return value


def cuda_releases(data: dict[str, Any]) -> tuple[CudaRelease, ...]:
    rows = []
    for row in data.get("cuda", []):
        where = f"cuda.toml [[cuda]] {row.get('version')}"
        patches = tuple(
            CudaPatch(
                from_version=p.get("from"),
                upto_version=p.get("upto"),
                max_gcc=p.get("max_gcc"),
                min_driver=p.get("min_driver"),
                source=_req(p, "source", where),
            )
            for p in row.get("patch", [])
        )
        for p in patches:
            if (p.from_version is None) == (p.upto_version is None):
                raise KnowledgeDataError(f"{where}: a [[cuda.patch]] row needs exactly one of 'from' and 'upto'")
        version = _version(row, "version", where)
        targets = arch_targets(row, where)
        gaps = tuple(str(g) for g in row.get("gaps", ()))
        if "min_driver" not in row and "min_driver" not in gaps:
            raise KnowledgeDataError(f"{where}: no min_driver, and gaps does not name it")
        plain = targets.capabilities
        rows.append(
            CudaRelease(
                version=version,
                line=version,
                min_cc=plain[0],
                max_cc=plain[-1],
                deprecated_cc=tuple(ComputeCapability.parse(c) for c in row.get("deprecated_cc", [])),
                min_gcc=row.get("min_gcc"),
                max_gcc=int(_req(row, "max_gcc", where)),
                max_gcc_warn=row.get("max_gcc_warn"),
                min_driver=_version(row, "min_driver", where) if "min_driver" in row else None,
                source=_req(row, "source", where),
                targets=targets,
                patches=patches,
                gaps=gaps,
            )
        )
    return tuple(sorted(rows, key=lambda r: parse(r.version)))


_TARGET_RE = re.compile(r"^[0-9]{2,3}[a-z]?$")


def arch_targets(row: dict[str, Any], where: str) -> ArchTargets:
    """A [[cuda]] row's ``sass`` / ``ptx`` ("50 52 ... 90a 100f": what ptxas accepts) and ``targets``
    (where the set was read)."""
    found: dict[str, tuple[str, ...]] = {}
    for key in ("sass", "ptx"):
        names = str(_req(row, key, where)).split()
        bad = [n for n in names if not _TARGET_RE.match(n)]
        if bad or not names:
            raise KnowledgeDataError(f"{where}: {key} = {row[key]!r} is not a list like \"50 52 90a\"")
        found[key] = tuple(names)
    if not any(n.isdigit() for n in found["sass"]):
        raise KnowledgeDataError(f"{where}: sass names no plain sm_XY target")
    return ArchTargets(found["sass"], found["ptx"], str(_req(row, "targets", where)))


def arch_support(data: dict[str, Any]) -> tuple[ArchSupport, ...]:
    return tuple(
        ArchSupport(
            ComputeCapability.parse(cc),
            str(row["cuda_min"]),
            row.get("cuda_max"),
            row["source"],
            row.get("reported_torch"),
            row.get("reported_source", ""),
        )
        for row in data.get("arch", [])
        for cc in row["cc"]
    )


def gcc_caveats(data: dict[str, Any]) -> tuple[GccCaveat, ...]:
    return tuple(
        GccCaveat(
            cuda_min=row["cuda_min"],
            cuda_max=row["cuda_max"],
            gcc=int(row["gcc"]),
            message=row["message"],
            fix=row["fix"],
            source=row["source"],
            good=row.get("good"),
        )
        for row in data.get("gcc_caveat", [])
    )


def driver_branches(data: dict[str, Any]) -> tuple[DriverBranch, ...]:
    rows = [DriverBranch(int(r["branch"]), str(r["cuda"]), r["source"]) for r in data.get("branches", [])]
    return tuple(sorted(rows, key=lambda r: r.branch))


def driver_limits(data: dict[str, Any]) -> tuple[DriverLimit, ...]:
    return tuple(
        DriverLimit(
            generation=row["generation"],
            min_cc=_cc(row, "min_cc", "drivers.toml"),
            max_cc=_cc(row, "max_cc", "drivers.toml"),
            last_branch=row.get("last_branch"),
            last_cuda=row.get("last_cuda"),
            source=row["source"],
            unconfirmed=bool(row.get("unconfirmed", False)),
        )
        for row in data.get("generation", [])
    )


def gpu_chips(data: dict[str, Any]) -> tuple[GpuChip, ...]:
    chips = []
    for row in data.get("chip", []):
        where = f"gpus.toml [[chip]] {row.get('name')}"
        chips.append(
            GpuChip(
                name=_req(row, "name", where),
                generation=_req(row, "generation", where),
                cc=_cc(row, "cc", where),
                devices=tuple((int(k, 16), str(v)) for k, v in row.get("devices", {}).items()),
                ranges=tuple((int(a, 16), int(b, 16)) for a, b in row.get("ranges", [])),
                source=_req(row, "source", where),
            )
        )
    return tuple(chips)


def cudnn_releases(data: dict[str, Any]) -> tuple[CudnnRelease, ...]:
    rows = []
    for row in data.get("cudnn", []):
        where = f"cudnn.toml [[cudnn]] {row.get('version')}"
        rows.append(
            CudnnRelease(
                version=_version(row, "version", where),
                cuda=tuple(_req(row, "cuda", where)),
                lowest_cc=tuple(
                    (int(major), ComputeCapability.parse(cc)) for major, cc in _req(row, "lowest_cc", where).items()
                ),
                source=_req(row, "source", where),
                unconfirmed=bool(row.get("unconfirmed", False)),
            )
        )
    return tuple(sorted(rows, key=lambda r: parse(r.version)))


def breakages(data: dict[str, Any]) -> tuple[Breakage, ...]:
    rows = []
    for row in data.get("breakage", []):
        where = f"breakages.toml [[breakage]] {row.get('id')}"
        action = _req(row, "action", where)
        if action not in ("pin", "env", "patch", "toolchain"):
            raise KnowledgeDataError(f"{where}: unknown action {action!r}")
        severity = row.get("severity", "warning")
        if severity not in ("error", "warning", "info"):
            raise KnowledgeDataError(f"{where}: unknown severity {severity!r}")
        below = row.get("when_arch_below")
        rows.append(
            Breakage(
                id=_req(row, "id", where),
                torch=_req(row, "torch", where),
                trigger=_req(row, "trigger", where),
                symptom=_req(row, "symptom", where),
                fix=_req(row, "fix", where),
                action=action,
                value=_req(row, "value", where),
                source=_req(row, "source", where),
                when_arch_below=ComputeCapability.parse(below) if below else None,
                when_gcc=row.get("when_gcc"),
                when_cuda=row.get("when_cuda"),
                when_python=row.get("when_python"),
                when_cudnn=row.get("when_cudnn"),
                when_torchvision=bool(row.get("when_torchvision", False)),
                when_host=row.get("when_host"),
                patch=row.get("patch"),
                handled=bool(row.get("handled", False)),
                resolved_by_env=tuple(row.get("resolved_by_env", ())),
                severity=severity,
                unconfirmed=bool(row.get("unconfirmed", False)),
            )
        )
    return tuple(rows)


def tool_floors(data: dict[str, Any]) -> tuple[ToolFloor, ...]:
    return tuple(
        ToolFloor(r["release"], r["requirement"], r["source"], r.get("project", "torch"), r.get("stage", "build"))
        for r in data.get("tool_floor", [])
    )


def pip_commands(data: dict[str, Any]) -> tuple[PipCommand, ...]:
    return tuple(PipCommand(r["torch"], r["command"], r["source"]) for r in data.get("pip_command", []))


def wheel_caveats(data: dict[str, Any]) -> tuple[WheelCaveat, ...]:
    return tuple(
        WheelCaveat(
            torch=r["torch"],
            tags=tuple(r["tags"]),
            below_cc=_cc(r, "below_cc", "torch.toml [[wheel_caveat]]"),
            message=r["message"],
            source=r["source"],
        )
        for r in data.get("wheel_caveat", [])
    )


def runtime_caveats(data: dict[str, Any]) -> tuple[RuntimeCaveat, ...]:
    return tuple(
        RuntimeCaveat(
            feature=str(row["feature"]),
            below_cc=ComputeCapability.parse(row["below_cc"]),
            message=str(row["message"]),
            advice=str(row["advice"]),
            source=str(row["source"]),
        )
        for row in data.get("runtime_caveat", [])
    )
