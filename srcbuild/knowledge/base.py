"""``KnowledgeBase``: the loaded facts and the questions srcbuild asks of them.

``load_knowledge()`` reads the data files once per process. Every answer is a row (or a value
derived from rows) that still carries its ``source``.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import re
from dataclasses import field
from pathlib import Path
from typing import Any

import srcbuild.knowledge.gpu_names as gpu_names
import srcbuild.knowledge.load as load
import srcbuild.knowledge.versions as versions
from srcbuild import tables
from srcbuild.capability import ComputeCapability, generation
from srcbuild.knowledge.model import (
    ArchSupport,
    Breakage,
    BuildPins,
    CudaRelease,
    CudnnRelease,
    DriverBranch,
    DriverLimit,
    GccCaveat,
    GpuChip,
    GpuModel,
    PinReason,
    PipCommand,
    RuntimeCaveat,
    ToolFloor,
    TorchRelease,
    WheelCaveat,
)
from srcbuild.packages import PACKAGES
from srcbuild.records import record

STALE_DAYS = 60  # older knowledge is called out by doctor, recommend and compat
_SEEN_LABELS = {name: name for name in PACKAGES}  # torch, torchvision, torchaudio
_SEEN_PREFIXES = (("nvidia-cuda-nvcc", "CUDA"), ("nvidia-cudnn-", "cuDNN"), ("nvidia-nccl-", "NCCL"))


@record
class KnowledgeBase:
    """Every compatibility fact srcbuild knows, as tuples of frozen rows."""

    cuda_releases: tuple[CudaRelease, ...]
    arch_support: tuple[ArchSupport, ...]
    gcc_caveats: tuple[GccCaveat, ...]
    driver_branches: tuple[DriverBranch, ...]
    driver_limits: tuple[DriverLimit, ...]
    gpu_chips: tuple[GpuChip, ...]
    torch_releases: tuple[TorchRelease, ...]
    cudnn_releases: tuple[CudnnRelease, ...]
    breakages: tuple[Breakage, ...]
    tool_floors: tuple[ToolFloor, ...]
    pip_commands: tuple[PipCommand, ...] = ()
    wheel_caveats: tuple[WheelCaveat, ...] = ()
    runtime_caveats: tuple[RuntimeCaveat, ...] = ()
    checked: str = ""  # the date the data was last checked against its sources
    # what `knowledge refresh` last found on the package index: project -> newest release (index.toml)
    index_newest: tuple[tuple[str, str], ...] = ()
    # (package, release, python_min, python_max, source): a paired package's narrower Python range
    paired_python: tuple[tuple[str, str, str, str, str], ...] = ()
    _torch_overrides: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)

    def release_versions(self, project: str) -> tuple[tuple[int, ...], ...]:
        """Every torch (or torchvision, torchaudio) release this knowledge names, as (major, minor,
        patch), oldest first; worked out once per knowledge base (the rules ask it for every recipe)."""
        return self._release_versions.get(project, ())

    @functools.cached_property
    def _release_versions(self) -> dict[str, tuple[tuple[int, ...], ...]]:
        found: dict[str, set[tuple[int, ...]]] = {"torch": set()}
        for row in self.torch_releases:
            for release, _ in row.torchvision_map:  # the torch releases the table knows
                parsed = versions.try_parse(release)
                if parsed is not None:
                    found["torch"].add((*parsed, 0, 0, 0)[:3])
            for package, mapping in row.paired_maps:
                for _, names in mapping:
                    for name in names:
                        parsed = versions.try_parse(name)
                        if parsed is not None:
                            found.setdefault(package, set()).add((*parsed, 0, 0, 0)[:3])
        return {project: tuple(sorted(releases)) for project, releases in found.items()}

    # -- CUDA -------------------------------------------------------------------------------------

    def cuda(self, version: str) -> CudaRelease | None:
        """The release row for ``version``; "11.4.0" gets 11.4's row with the 11.4.0 nuance applied."""
        parsed = versions.try_parse(version)
        if parsed is None:
            return None
        for row in self.cuda_releases:
            if versions.line(parsed) != versions.parse(row.line):
                continue
            if len(parsed) < 3:
                unresolved = tuple(p for p in row.patches if p.max_gcc is not None and p.max_gcc < row.max_gcc)
                return dataclasses.replace(row, version=versions.show(parsed), unresolved_patches=unresolved)
            changes: dict[str, Any] = {"version": versions.show(parsed)}
            for patch in row.patches:
                if not patch.applies_to(version):
                    continue
                if patch.max_gcc is not None:
                    changes["max_gcc"] = patch.max_gcc
                if patch.min_driver is not None:
                    changes["min_driver"] = patch.min_driver
            return dataclasses.replace(row, **changes)
        return None

    def cuda_window(self, cc: ComputeCapability) -> tuple[CudaRelease, ...]:
        """CUDA releases whose nvcc can target ``cc``, oldest first."""
        return tuple(r for r in self.cuda_releases if r.accepts_cc(cc))

    def gcc_pin(self, cuda: str, gcc_major: int) -> str | None:
        """The gcc release to provision for ``gcc_major`` with ``cuda`` when later minors of that
        major are known bad ("10.2" for gcc 10 with CUDA up to 11.4.0); None: any release will do."""
        for caveat in self.gcc_caveats:
            if caveat.good is not None and caveat.applies(cuda, gcc_major):
                return caveat.good
        return None

    def arch(self, cc: ComputeCapability) -> ArchSupport | None:
        """Which CUDA releases target ``cc``, with the source of that fact."""
        for row in self.arch_support:
            if row.cc == cc:
                return row
        return None

    # -- drivers ----------------------------------------------------------------------------------

    def last_driver_for(self, cc: ComputeCapability) -> DriverLimit:
        """The last driver branch and CUDA for ``cc``'s generation (``last_branch`` None: still current)."""
        for row in self.driver_limits:
            if row.min_cc <= cc <= row.max_cc:
                return row
        return DriverLimit(
            generation=generation(cc),
            min_cc=cc,
            max_cc=cc,
            last_branch=None,
            last_cuda=None,
            source="https://developer.nvidia.com/cuda-gpus (supported by current drivers)",
        )

    def max_cuda_for_driver(self, driver_version: str) -> str | None:
        """The newest CUDA release whose minimum driver ``driver_version`` meets ("470.82.01" -> "11.4")."""
        driver = versions.try_parse(driver_version)
        if driver is None:
            return None
        best: str | None = None
        for row in self.cuda_releases:
            if row.min_driver is not None and versions.at_least(driver, versions.parse(row.min_driver)):
                best = row.line
        return best

    def driver_branch(self, branch: int) -> DriverBranch | None:
        for row in self.driver_branches:
            if row.branch == branch:
                return row
        return None

    # -- GPUs -------------------------------------------------------------------------------------

    def gpu_by_pci_id(self, device_id: int) -> GpuChip | None:
        """The chip of an NVIDIA PCI device id (vendor 0x10de): an exact id first, then id ranges."""
        for chip in self.gpu_chips:
            if chip.device_name(device_id) is not None:
                return chip
        for chip in self.gpu_chips:
            if any(lo <= device_id <= hi for lo, hi in chip.ranges):
                return chip
        return None

    def gpus_by_name(self, name: str, prefix: bool = False) -> list[GpuModel]:
        """Models whose marketing name matches ``name`` (see ``gpu_names.find_gpus``); ``prefix``:
        ``name`` is what a tool kept of a longer name."""
        return gpu_names.find_gpus(self.gpu_chips, name, prefix)

    # -- torch, torchvision -----------------------------------------------------------------------

    def torch(self, version: str) -> TorchRelease | None:
        """The torch line of ``version`` ("v1.7.1", "1.7.1" or "1.7") with per-release overrides applied."""
        parsed = versions.try_parse(version)
        if parsed is None:
            return None
        for row in self.torch_releases:
            if versions.line(parsed) != versions.parse(row.line):
                continue
            shown = versions.show(parsed)
            changes: dict[str, Any] = {"version": shown}
            override = self._torch_overrides.get(shown, {})
            changes.update(override)
            return dataclasses.replace(row, **changes)
        return None

    def torchvision_for(self, torch_version: str) -> tuple[str, ...]:
        release = self.torch(torch_version)
        return release.torchvision if release else ()

    def paired_for(self, package: str, torch_version: str) -> tuple[str, ...]:
        """``package``'s releases made for a torch release ("torchaudio", "1.7.1" -> ("0.7.2",))."""
        release = self.torch(torch_version)
        return release.paired(package) if release else ()

    def torch_for_package(self, package: str, version: str) -> str | None:
        """The torch release a release of ``package`` was made for ("torchaudio", "0.7.2" -> "1.7.1")."""
        parsed = versions.try_parse(version)
        if parsed is None:
            return None
        shown = versions.show(parsed)
        for row in self.torch_releases:
            for torch_version, releases in dict(row.paired_maps).get(package, ()):
                if shown in releases:
                    return torch_version
        return None

    def python_range_of(self, package: str, version: str) -> tuple[str, str, str] | None:
        """(python_min, python_max, source) of a paired package's release whose wheels cover less
        Python than its torch's row (``[[paired_python]]`` of torch.toml), or None."""
        for name, release, low, high, source in self.paired_python:
            if name == package and release == version:
                return low, high, source
        return None

    def torch_for_torchvision(self, torchvision_version: str) -> str | None:
        """The torch release a torchvision release was made for ("0.8.2" -> "1.7.1")."""
        parsed = versions.try_parse(torchvision_version)
        if parsed is None:
            return None
        shown = versions.show(parsed)
        for row in self.torch_releases:
            for torch_version, tvs in row.torchvision_map:
                if shown in tvs:
                    return torch_version
        return None

    def newest_torch(self, predicate: Any) -> TorchRelease | None:
        """The newest torch line for which ``predicate(release)`` holds."""
        for row in reversed(self.torch_releases):
            if predicate(row):
                return row
        return None

    def pip_command(self, torch: str, torchvision: str | None, tag: str) -> str | None:
        """The pip command that installs the official ``tag`` wheels of ``torch`` (and its torchvision)."""
        for row in self.pip_commands:
            if versions.matches(row.torch, torch):
                command = row.command.format(torch=torch, torchvision=torchvision or "", tag=tag)
                return command if torchvision else re.sub(r" torchvision==\S*", "", command)
        return None

    @property
    def newest_known_torch(self) -> str:
        """The newest torch release the tables know ("2.15.0"): what the knowledge is current to."""
        known = [v for row in self.torch_releases for v, _ in row.torchvision_map]
        return max(known, key=versions.parse) if known else ""

    @property
    def newest_seen(self) -> str:
        """The newest release of each tracked project on the index when the knowledge was last
        refreshed ("torch 2.15.0, torchvision 0.29.2, ..., CUDA 13.5.37, cuDNN 9.28.1.4, NCCL 2.32.3")."""
        groups: dict[str, list[str]] = {}
        for project, release in self.index_newest:
            label = _SEEN_LABELS.get(project) or next(
                (name for prefix, name in _SEEN_PREFIXES if project.startswith(prefix)), project
            )
            groups.setdefault(label, []).append(release)
        return ", ".join(f"{label} {max(found, key=versions.parse)}" for label, found in groups.items())

    def stale_note(self, today: datetime.date) -> str:
        """A line saying the knowledge is older than ``STALE_DAYS`` on ``today``; "" when it is not
        (or when its date is unknown)."""
        try:
            checked = datetime.date.fromisoformat(self.checked)
        except ValueError:
            return ""
        age = (today - checked).days
        if age <= STALE_DAYS:
            return ""
        return (
            f"the knowledge is {age} days old (last checked {self.checked}): releases since then are not "
            "known; see what is new with: srcbuild knowledge refresh --dry-run"
        )

    def runtime_caveats_for(self, cc: ComputeCapability) -> tuple[RuntimeCaveat, ...]:
        """Features of current torch that ``cc`` cannot use (torch.compile below 7.0)."""
        return tuple(c for c in self.runtime_caveats if cc < c.below_cc)

    def caveats(self, torch: str, tag: str, cc: ComputeCapability) -> tuple[WheelCaveat, ...]:
        """What the official ``tag`` wheel of ``torch`` lacks on a GPU of capability ``cc``."""
        return tuple(
            c for c in self.wheel_caveats if tag in c.tags and cc < c.below_cc and versions.matches(c.torch, torch)
        )

    # -- cuDNN ------------------------------------------------------------------------------------

    def cudnn(self, version: str) -> CudnnRelease | None:
        """The cuDNN row for ``version``; a coarse pin ("7.6") merges the rows under it (7.6.3-7.6.5)."""
        parsed = versions.try_parse(version)
        if parsed is None:
            return None
        rows = [
            r
            for r in self.cudnn_releases
            if _prefix_of(versions.parse(r.version), parsed) or _prefix_of(parsed, versions.parse(r.version))
        ]
        if not rows:
            return None
        if len(rows) == 1:
            return dataclasses.replace(rows[0], version=versions.show(parsed))
        lowest: dict[int, ComputeCapability] = {}
        for r in rows:
            for major, cc in r.lowest_cc:
                lowest[major] = min(cc, lowest.get(major, cc))
        return CudnnRelease(
            version=versions.show(parsed),
            cuda=tuple(sorted(dict.fromkeys(c for r in rows for c in r.cuda), key=versions.parse)),
            lowest_cc=tuple(sorted(lowest.items())),
            source="; ".join(dict.fromkeys(r.source for r in rows)),
            unconfirmed=any(r.unconfirmed for r in rows),
        )

    # -- breakages and build pins -----------------------------------------------------------------

    def breakages_for(self, torch_version: str) -> tuple[Breakage, ...]:
        return tuple(b for b in self.breakages if b.affects_torch(torch_version))

    def build_pins(self, torch_version: str, host_tools: dict[str, str] | None = None) -> BuildPins:
        """pip requirements and build variables an old torch tag needs on today's tools.

        ``host_tools`` maps tool names to the versions found on the host ("cmake": "4.0.2"); a
        breakage conditioned on a host tool applies when that tool is reported in range, or when
        ``host_tools`` is None (unknown host: be safe).
        """
        return pins_for(self.tool_floors, self.breakages, torch_version, host_tools)

    def package_build_pins(self, project: str, version: str) -> BuildPins:
        """pip requirements the build environment of a release of a package built against torch
        needs ("torchvision", "0.8.2" -> setuptools<77, numpy<2); its run-time pins are ``runtime_pins``."""
        rows = [
            f
            for f in self.tool_floors
            if f.project == project and f.stage == "build" and versions.matches(f.release, version)
        ]
        reasons = tuple(PinReason(f.requirement, f"{project} {version} build", f.source) for f in rows)
        return BuildPins(pip=tuple(_merge_requirements([f.requirement for f in rows])), env=(), reasons=reasons)

    def runtime_pins(self, project: str, version: str) -> tuple[str, ...]:
        """pip constraints on the run-time dependencies of ``project``'s wheel of ``version``
        ("torchvision", "0.8.2" -> pillow<10,!=8.3.*): what pip gets wherever it installs that wheel."""
        return runtime_pins_of(self.tool_floors, project, version)


def pins_for(
    floors: tuple[ToolFloor, ...],
    breakages: tuple[Breakage, ...],
    torch_version: str,
    host_tools: dict[str, str] | None = None,
) -> BuildPins:
    """``KnowledgeBase.build_pins`` of these tool floors and breakages."""
    pip: list[str] = []
    env: dict[str, str] = {}
    reasons: list[PinReason] = []
    for floor in floors:
        if floor.project == "torch" and floor.stage == "build" and versions.matches(floor.release, torch_version):
            pip.append(floor.requirement)
            reasons.append(PinReason(floor.requirement, f"torch {torch_version} build tool range", floor.source))
    for b in (b for b in breakages if b.affects_torch(torch_version)):
        if not b.handled or not _host_condition_holds(b.when_host, host_tools):
            continue
        if b.action == "pin":
            pip.append(b.value)
        elif b.action == "env":
            name, _, value = b.value.partition("=")
            env[name] = value
        else:
            continue
        reasons.append(PinReason(b.value, b.symptom, b.source))
    return BuildPins(pip=tuple(_merge_requirements(pip)), env=tuple(env.items()), reasons=tuple(reasons))


@functools.lru_cache(maxsize=4)
def _pin_rows(data_dir: Path | None) -> tuple[tuple[ToolFloor, ...], tuple[Breakage, ...]]:
    data = tables.read_table("breakages", data_dir or tables.DATA_DIR)
    return load.tool_floors(data), load.breakages(data)


def build_pins(torch_version: str, host_tools: dict[str, str] | None = None, data_dir: Path | None = None) -> BuildPins:
    """``load_knowledge(data_dir).build_pins(...)`` from the one table it reads (breakages.toml):
    a cache lookup's fingerprint needs these pins and nothing else of the knowledge base."""
    floors, breakages = _pin_rows(data_dir)
    return pins_for(floors, breakages, torch_version, host_tools)


def runtime_pins_of(floors: tuple[ToolFloor, ...], project: str, version: str) -> tuple[str, ...]:
    """``KnowledgeBase.runtime_pins`` of these rows: the "run" rows of ``project`` whose release
    range holds ``version`` (a local label such as +cu92.sm30 is ignored), one line per package."""
    public = version.split("+", 1)[0]
    rows = [
        f.requirement
        for f in floors
        if f.project == project and f.stage == "run" and versions.matches(f.release, public)
    ]
    return tuple(_merge_requirements(rows))


def runtime_pins(project: str, version: str, data_dir: Path | None = None) -> tuple[str, ...]:
    """``load_knowledge(data_dir).runtime_pins(...)`` from breakages.toml alone: an install of a
    cached wheel needs these pins and nothing else of the knowledge base."""
    floors, _breakages = _pin_rows(data_dir)
    return runtime_pins_of(floors, project, version)


def _host_condition_holds(condition: str | None, host_tools: dict[str, str] | None) -> bool:
    if condition is None or host_tools is None:
        return True
    m = re.match(r"^([A-Za-z0-9_.-]+)\s*(.*)$", condition)
    if not m:
        return True
    tool, spec = m.group(1), m.group(2)
    found = host_tools.get(tool)
    if found is None:
        return True
    return versions.matches(spec, found)


def _merge_requirements(requirements: list[str]) -> list[str]:
    """Join requirements on the same package: ["cmake>=3.18", "cmake<4"] -> ["cmake>=3.18,<4"]."""
    merged: dict[str, list[str]] = {}
    for req in requirements:
        m = re.match(r"^([A-Za-z0-9_.-]+)(.*)$", req)
        assert m, req
        merged.setdefault(m.group(1), []).append(m.group(2))
    return [name + ",".join(s for s in specs if s) for name, specs in merged.items()]


def _prefix_of(short: tuple[int, ...], long: tuple[int, ...]) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


def _paired_maps(row: dict[str, Any]) -> tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...]:
    """The row's map of each package built against torch (a key named after a registered package)."""
    return tuple(
        (name, tuple((k, tuple(v)) for k, v in row[name].items()))
        for name, spec in PACKAGES.items()
        if spec.needs_torch_wheel and isinstance(row.get(name), dict)
    )


def _torch_rows(data: dict[str, Any], cuda_rows: tuple[CudaRelease, ...]) -> tuple:
    rows = []
    overrides: dict[str, dict[str, Any]] = {}
    lowest_for: dict[str, ComputeCapability] = {}  # the torch lines share a few CUDA floors
    for row in data.get("torch", []):
        line = str(row["version"])
        cuda_min = str(row["cuda_min"])
        if cuda_min not in lowest_for:
            lowest_for[cuda_min] = _lowest_cc_for_cuda(cuda_min, cuda_rows)
        lowest = lowest_for[cuda_min]
        floor = row.get("cc_floor")
        if floor is not None:
            lowest = max(lowest, ComputeCapability.parse(floor))
        release = TorchRelease(
            version=line,
            line=line,
            torchvision_map=tuple((k, tuple(v)) for k, v in row.get("torchvision", {}).items()),
            paired_maps=_paired_maps(row),
            python_min=str(row["python_min"]),
            python_max=str(row["python_max"]),
            cuda_min=cuda_min,
            cuda_max=row.get("cuda_max"),
            gcc_min=str(row["gcc_min"]),
            cudnn_min=str(row["cudnn_min"]),
            cudnn_max=str(row["cudnn_max"]),
            lowest_cc=lowest,
            official_wheels=_wheels(row.get("official_wheels", {})),
            source=row["source"],
            unconfirmed=frozenset(row.get("unconfirmed", ())),
        )
        rows.append(release)
        for patch_version, fields in row.get("overrides", {}).items():
            converted = dict(fields)
            if "official_wheels" in converted:
                converted["official_wheels"] = _wheels(converted["official_wheels"])
            overrides[patch_version] = converted
    return tuple(sorted(rows, key=lambda r: versions.parse(r.line))), overrides


def _wheels(table: dict[str, str]) -> tuple[tuple[str, ComputeCapability], ...]:
    return tuple((tag, ComputeCapability.parse(cc)) for tag, cc in table.items())


def _lowest_cc_for_cuda(cuda_min: str, cuda_rows: tuple[CudaRelease, ...]) -> ComputeCapability:
    """The lowest capability any CUDA release >= cuda_min can target."""
    floor = versions.parse(cuda_min)
    candidates = [r.min_cc for r in cuda_rows if versions.at_least(versions.parse(r.line), versions.line(floor))]
    return min(candidates) if candidates else cuda_rows[-1].min_cc


@functools.lru_cache(maxsize=4)
def load_knowledge(data_dir: Path | None = None) -> KnowledgeBase:
    """The knowledge base from the data files shipped in the package (read once, then cached)."""
    directory = data_dir or tables.DATA_DIR
    cuda_data = tables.read_table("cuda", directory)
    drivers_data = tables.read_table("drivers", directory)
    breakage_data = tables.read_table("breakages", directory)
    cuda_rows = load.cuda_releases(cuda_data)
    breakage_rows = load.breakages(breakage_data)
    torch_data = tables.read_table("torch", directory)
    torch_rows, overrides = _torch_rows(torch_data, cuda_rows)
    seen = tables.read_table("index", directory) if (directory / "index.toml").is_file() else {}
    return KnowledgeBase(
        cuda_releases=cuda_rows,
        arch_support=load.arch_support(cuda_data),
        gcc_caveats=load.gcc_caveats(cuda_data),
        driver_branches=load.driver_branches(drivers_data),
        driver_limits=load.driver_limits(drivers_data),
        gpu_chips=load.gpu_chips(tables.read_table("gpus", directory)),
        torch_releases=torch_rows,
        cudnn_releases=load.cudnn_releases(tables.read_table("cudnn", directory)),
        breakages=breakage_rows,
        tool_floors=load.tool_floors(breakage_data),
        pip_commands=load.pip_commands(torch_data),
        wheel_caveats=load.wheel_caveats(torch_data),
        runtime_caveats=load.runtime_caveats(torch_data),
        checked=max(str(tables.read_table("capabilities", directory).get("checked", "")), str(seen.get("checked", ""))),
        index_newest=tuple((str(p["name"]), str(p["newest"])) for p in seen.get("project", [])),
        _torch_overrides=overrides,
        paired_python=tuple(
            (str(r["package"]), str(release), str(r["python_min"]), str(r["python_max"]), str(r["source"]))
            for r in torch_data.get("paired_python", [])
            for release in r["releases"]
        ),
    )
