"""``srcbuild knowledge refresh``: find releases on the package index newer than the tables, read the
binaries that settle their rows, and write those rows into the data files.

Deciding is pure: ``plan(tables, listings)`` compares what the index lists (``factscan.index``)
with what the data files know and names, per tracked project, the new releases, the one wheel that
must be read to settle each row (with its size) and the gaps no binary can fill. Doing is
``settle``: it downloads the chosen wheels (through ``toolchain.download.Downloader``: sha256 from the
index, bounded by ``max_bytes`` in all), reads them with ``factscan.read.scan_wheel`` and renders
rows; ``write`` appends them to the data files and ``index.toml``'s record of what was seen.

Granularity per kind: torch, torchvision, torchaudio are known by release (2.15.0); an nvcc, cuDNN
or NCCL project by line (13.4, 9.28, 2.32). Only what is newer than the newest the tables know
counts as new.

- nvcc: the newest patch of a new line; its ptxas settles ``sass``/``ptx``, its host_config.h
  (CUDA 13: the ``nvidia-cuda-crt`` wheel of the same version) ``max_gcc``; ``min_driver`` stays
  a named gap (NVIDIA's release notes state it, no binary does), and a target whose compute
  capability ``capabilities.toml`` lacks is named too.
- cuDNN, NCCL: the row's CUDA builds come from which projects list the line; ``lowest_cc`` from the
  libraries of one wheel when it fits the download bound, else a named gap (cuDNN rows are written
  only when read; an NCCL row may carry the gap).
- torch, torchvision, torchaudio: reported with what the index states (upload date, Python tags,
  sizes); their rows need release notes (CUDA range, gcc floor, cuDNN range, pairing), so they are
  named gaps and nothing is written.
"""

from __future__ import annotations

import difflib
import platform
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from packaging.version import Version

from srcbuild.factscan.index import IndexFile
from srcbuild.factscan.read import WheelFacts
from srcbuild.packages import PACKAGES
from srcbuild.records import record


@record
class Tracked:
    project: str
    kind: str  # torch | torchvision | torchaudio | nvcc | crt | cudnn | nccl
    cuda_major: int | None = None  # cuDNN and NCCL: the CUDA major of the project ("-cu12")


TRACKED: tuple[Tracked, ...] = (
    Tracked("torch", "torch"),
    Tracked("torchvision", "torchvision"),
    Tracked("torchaudio", "torchaudio"),
    Tracked("nvidia-cuda-nvcc-cu11", "nvcc"),
    Tracked("nvidia-cuda-nvcc-cu12", "nvcc"),
    Tracked("nvidia-cuda-nvcc", "nvcc"),
    Tracked("nvidia-cudnn-cu11", "cudnn", 11),
    Tracked("nvidia-cudnn-cu12", "cudnn", 12),
    Tracked("nvidia-cudnn-cu13", "cudnn", 13),
    Tracked("nvidia-nccl-cu11", "nccl", 11),
    Tracked("nvidia-nccl-cu12", "nccl", 12),
    Tracked("nvidia-nccl-cu13", "nccl", 13),
)
CRT = "nvidia-cuda-crt"  # CUDA 13's host_config.h
LINE_KINDS = ("nvcc", "cudnn", "nccl")


@record
class NewRelease:
    """A release (or, for nvcc/cuDNN/NCCL, a line) the index lists and the tables do not know."""

    project: str
    kind: str
    name: str  # "2.16.0", or the line "13.4"
    versions: tuple[str, ...]  # the index's releases of it
    read: tuple[IndexFile, ...]  # the wheels that settle its row (empty: nothing a binary settles)
    gaps: tuple[str, ...]  # what no binary states, named
    uploaded: str | None = None
    cuda_major: int | None = None
    metadata_of: IndexFile | None = None  # torch, torchvision, torchaudio: the wheel whose METADATA is read
    python_tags: tuple[str, ...] = ()  # of all its wheels on the index ("cp311", "cp314t", "py3")

    @property
    def read_bytes(self) -> int:
        return sum(f.size or 0 for f in self.read)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "kind": self.kind,
            "release": self.name,
            "versions": list(self.versions),
            "uploaded": self.uploaded,
            "read": [f.to_json() for f in self.read],
            "read_bytes": self.read_bytes,
            "metadata": self.metadata_of.filename if self.metadata_of else None,
            "gaps": list(self.gaps),
        }


@record
class RefreshPlan:
    new: tuple[NewRelease, ...]
    newest: tuple[tuple[str, str], ...]  # project -> newest release the index lists
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "new": [n.to_json() for n in self.new],
            "newest": dict(self.newest),
            "notes": list(self.notes),
        }


def _v(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def _line(version: Version) -> str:
    return ".".join(str(p) for p in version.release[:2])


def known(tables: Mapping[str, dict[str, Any]], item: Tracked) -> set[str] | None:
    """What the data files know of ``item``: releases (torch...) or lines (nvcc...); None: no table."""
    if item.kind in PACKAGES:  # torch's releases, and each paired package's map in torch.toml's rows
        out: set[str] = set()
        for row in tables["torch"].get("torch", []):
            if item.kind == "torch":  # the torch releases the rows name
                out.update(row.get("torchvision", {}))
            else:
                for paired in row.get(item.kind, {}).values():
                    out.update(paired)
        return out
    if item.kind == "nvcc":
        return {str(row["version"]) for row in tables["cuda"].get("cuda", [])}
    table = tables.get(item.kind)
    if table is None:
        return None if item.kind == "nccl" else set()
    lines = set()
    for row in table.get(item.kind, []):
        builds = [str(c) for c in row.get("cuda", [])]
        if any(b.split(".")[0] == str(item.cuda_major) for b in builds):
            lines.add(".".join(str(row["version"]).split(".")[:2]))
    return lines


def _final(files: Sequence[IndexFile]) -> list[IndexFile]:
    return [f for f in files if not f.version.is_prerelease and not f.version.is_devrelease and not f.version.local]


def _for_this_machine(files: Sequence[IndexFile]) -> list[IndexFile]:
    machine = platform.machine()
    return [f for f in files if any(t.endswith(machine) and "linux" in t for t in f.platform_tags)]


def plan(
    tables: Mapping[str, dict[str, Any]],
    listings: Mapping[str, Sequence[IndexFile]],
    capabilities: set[str],
) -> RefreshPlan:
    """What is new on the index (see the module docstring); ``capabilities``: the sm numbers
    capabilities.toml knows ("103")."""
    new: list[NewRelease] = []
    newest: list[tuple[str, str]] = []
    notes: list[str] = []
    for item in TRACKED:
        files = _final(listings.get(item.project, ()))
        if not files:
            notes.append(f"{item.project}: the index lists no wheel of it")
            continue
        newest.append((item.project, str(max(f.version for f in files))))
        have = known(tables, item)
        if have is None:
            notes.append(f"{item.project}: no {item.kind} table in the knowledge data; every line counts as new")
            have = set()
        if item.kind in LINE_KINDS:
            new.extend(_new_lines(item, files, have, listings, capabilities))
        else:
            new.extend(_new_releases(item, files, have))
    return RefreshPlan(tuple(new), tuple(newest), tuple(notes))


def _new_releases(item: Tracked, files: Sequence[IndexFile], have: set[str]) -> list[NewRelease]:
    top = max((_v(k) for k in have), default=())
    out = []
    for version in sorted({f.version for f in files}):
        name = str(version)
        if name in have or _v(name) <= top:
            continue
        mine = [f for f in files if f.version == version]
        gaps = {
            "torch": ("cuda_min", "gcc_min", "cudnn_min", "cudnn_max", "official_wheels", "torchvision"),
            "torchvision": ("the torch release it pairs with (Requires-Dist of its METADATA)",),
            "torchaudio": ("the torch release it pairs with (Requires-Dist of its METADATA)",),
        }[item.kind]
        uploaded = min((f.uploaded for f in mine if f.uploaded), default=None)
        meta = (_for_this_machine(mine) or [f for f in mine if "any" in f.platform_tags] or mine)[0]
        tags = tuple(sorted({t for f in mine for t in f.python_tags}, key=lambda t: (len(t), t)))
        out.append(NewRelease(item.project, item.kind, name, (name,), (), gaps, uploaded, None, meta, tags))
    return out


def _new_lines(
    item: Tracked,
    files: Sequence[IndexFile],
    have: set[str],
    listings: Mapping[str, Sequence[IndexFile]],
    capabilities: set[str],
) -> list[NewRelease]:
    del capabilities  # the targets are known only once ptxas is read (see ``settle``)
    lines: dict[str, list[IndexFile]] = {}
    for f in files:
        lines.setdefault(_line(f.version), []).append(f)
    family = [_v(k) for k in have if item.kind != "nvcc" or _same_family(item.project, k)]
    top = max(family, default=())
    out = []
    for line, mine in sorted(lines.items(), key=lambda kv: _v(kv[0])):
        if line in have or _v(line) <= top:
            continue
        versions = tuple(sorted({str(f.version) for f in mine}, key=_v))
        newest = [f for f in _for_this_machine(mine) if str(f.version) == versions[-1]]
        wheel = min(newest, key=lambda f: f.size or 0) if newest else None
        read: tuple[IndexFile, ...] = ()
        gaps: tuple[str, ...] = ()
        if item.kind == "nvcc":
            gaps = ("min_driver",)
            if wheel is None:
                gaps += ("sass", "ptx", "max_gcc")
            else:
                read = (wheel,)
                if _v(versions[-1])[0] >= 13:
                    crt = [
                        f for f in _for_this_machine(_final(listings.get(CRT, ())))
                        if str(f.version) == versions[-1]
                    ]
                    read += (crt[0],) if crt else ()
                    gaps += () if crt else ("max_gcc",)
        else:
            read = (wheel,) if wheel is not None else ()
            gaps = () if wheel is not None else ("lowest_cc",)
        uploaded = min((f.uploaded for f in mine if f.uploaded), default=None)
        out.append(NewRelease(item.project, item.kind, line, versions, read, gaps, uploaded, item.cuda_major))
    return out


def _same_family(project: str, line: str) -> bool:
    """nvidia-cuda-nvcc-cu12 is compared with the 12.x rows, nvidia-cuda-nvcc with 13 and later."""
    major = _v(line)[0]
    suffix = re.search(r"-cu(\d+)$", project)
    return major == int(suffix.group(1)) if suffix else major >= 13


@record
class Settled:
    """What reading settled: the rows to write, per data file, and what is left open."""

    rows: tuple[tuple[str, str], ...]  # (table, TOML text of one row)
    gaps: tuple[tuple[str, str], ...]  # (release, gap)
    unread: tuple[tuple[str, str], ...] = ()  # (release, why not read)
    facts: tuple[WheelFacts, ...] = field(default_factory=tuple)
    stated: tuple[tuple[str, str], ...] = ()  # (release, what its METADATA states)
    pairings: tuple[tuple[str, str, str], ...] = ()  # (package, torch release, package release) to write


def settle(
    found: RefreshPlan,
    fetch: Callable[[IndexFile], Path],
    scan: Callable[[Path], WheelFacts],
    max_bytes: int,
    capabilities: set[str],
    gcc_floor: tuple[int, str] | None = None,
    read_meta: Callable[[IndexFile], str] | None = None,
) -> Settled:
    """Download (within ``max_bytes`` in all) and read what settles each new row; render the rows.
    ``gcc_floor``: (min_gcc, CUDA line) of the newest CUDA row, carried into a new row whose
    host_config.h states no lower bound (Spack's floor is open-ended: ``%gcc@:5`` for ``cuda@11.4:``)."""
    budget = max_bytes
    rows: list[tuple[str, str]] = []
    gaps: list[tuple[str, str]] = []
    unread: list[tuple[str, str]] = []
    facts_read: list[WheelFacts] = []
    stated: list[tuple[str, str]] = []
    pairings: list[tuple[str, str, str]] = []
    by_line: dict[tuple[str, str], list[tuple[NewRelease, tuple[WheelFacts, ...]]]] = {}
    # the bound goes to CUDA first (small wheels, rules depend on them), then to the newest lines
    order = sorted(found.new, key=lambda n: (n.kind != "nvcc", tuple(-p for p in _v(n.name))))
    for item in order:
        label = f"{item.project} {item.name}"
        if item.metadata_of is not None and read_meta is not None:
            said, pairing, left = metadata_facts(item, read_meta(item.metadata_of))
            if item.python_tags:
                said.insert(0, f"wheels for {' '.join(item.python_tags)}")
            stated.extend((label, s) for s in said)
            pairings.extend(pairing)
            gaps.extend((label, g) for g in left)
            continue
        gaps.extend((label, g) for g in item.gaps)
        read: tuple[WheelFacts, ...] = ()
        if item.read:
            if item.read_bytes > budget:
                unread.append((label, f"{_mib(item.read_bytes)} to download; the bound left is {_mib(budget)}"))
                gaps.extend((label, g) for g in _read_gaps(item))
            else:
                budget -= item.read_bytes
                read = tuple(scan(fetch(f)) for f in item.read)
                facts_read.extend(read)
        if item.kind == "nvcc":
            if read:
                row, more = nvcc_row(item, read, capabilities, gcc_floor)
                rows.append(("cuda", row))
                gaps.extend((label, g) for g in more)
        elif item.kind in ("cudnn", "nccl"):
            by_line.setdefault((item.kind, item.name), []).append((item, read))
    for (kind, line), entries in sorted(by_line.items(), key=lambda kv: (kv[0][0], _v(kv[0][1]))):
        written = library_row(kind, line, entries)
        if written is not None:
            rows.append((kind, written))
    rows.sort(key=lambda r: (r[0], _v(re.search(r'version = "([^"]+)"', r[1]).group(1))))  # type: ignore[union-attr]
    return Settled(tuple(rows), tuple(gaps), tuple(unread), tuple(facts_read), tuple(stated), tuple(pairings))


_NVIDIA_PIN_RE = re.compile(r"^nvidia-(cuda-runtime|cudnn|nccl)(?:-cu\d+)?$")


def metadata_facts(
    item: NewRelease, text: str
) -> tuple[list[str], list[tuple[str, str, str]], list[str]]:
    """What a torch/torchvision/torchaudio release's METADATA settles: (facts stated, pairings to
    write, gaps left). A package pinned to one torch release (``Requires-Dist: torch==2.16.0``) is
    paired with it; torch's own pins name its CUDA runtime, cuDNN and NCCL."""
    from email.parser import HeaderParser

    from packaging.requirements import InvalidRequirement, Requirement

    headers = HeaderParser().parsestr(text, headersonly=True)
    said: list[str] = []
    if headers.get("Requires-Python"):
        said.append(f"Requires-Python {headers['Requires-Python']}")
    torch_pin: str | None = None
    for line in headers.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.name == "torch":
            torch_pin = str(requirement.specifier)
            said.append(f"Requires-Dist torch{torch_pin}")
        elif _NVIDIA_PIN_RE.match(requirement.name):
            said.append(f"Requires-Dist {requirement.name}{requirement.specifier}")
    if item.kind == "torch":
        return said, [], list(item.gaps)
    exact = [p[2:] for p in (torch_pin or "").split(",") if p.startswith("==")]
    if len(exact) == 1:
        return said, [(item.kind, exact[0], item.name)], []
    why = f"Requires-Dist torch{torch_pin}" if torch_pin else "no Requires-Dist on torch"
    return said, [], [f"the torch release it pairs with ({why}: not one release)"]


def add_pairing(text: str, package: str, torch: str, release: str) -> str | None:
    """torch.toml with ``release`` of ``package`` paired with ``torch`` in its line's row (the
    ``package = { "2.16.0" = [...] }`` map, made when missing); None when no row holds that line."""
    import json

    import tomllib

    line = ".".join(torch.split(".")[:2])
    head = re.search(rf'^\[\[torch\]\]\nversion = "{re.escape(line)}"\n', text, re.M)
    if head is None:
        return None
    end = text.find("\n\n", head.end())
    end = len(text) if end < 0 else end
    row = text[head.end() : end]
    found = re.search(rf"^{package} = (\{{.*\}})$", row, re.M)
    mapping: dict[str, list[str]] = tomllib.loads(f"x = {found.group(1)}")["x"] if found else {}
    mapping[torch] = sorted({*mapping.get(torch, []), release}, key=_v)
    entries = sorted(mapping.items(), key=lambda kv: _v(kv[0]))
    pairs = ", ".join(f"{json.dumps(k)} = [{', '.join(json.dumps(v) for v in vs)}]" for k, vs in entries)
    rendered = f"{package} = {{ {pairs} }}"
    if found:
        row = row[: found.start()] + rendered + row[found.end() :]
    else:
        row = rendered + "\n" + row
    return text[: head.end()] + row + text[end:]


def _read_gaps(item: NewRelease) -> tuple[str, ...]:
    return ("sass", "ptx", "max_gcc") if item.kind == "nvcc" else ("lowest_cc",)


def _mib(size: int) -> str:
    from srcbuild.files import human_size

    return human_size(size)


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _index_note(item: NewRelease) -> str:
    when = f", first uploaded {item.uploaded}" if item.uploaded else ""
    return f"index ({item.project} {' '.join(item.versions)}{when})"


def nvcc_row(
    item: NewRelease, read: Sequence[WheelFacts], capabilities: set[str], gcc_floor: tuple[int, str] | None = None
) -> tuple[str, tuple[str, ...]]:
    """The [[cuda]] row of a new CUDA line, and the gaps it leaves."""
    ptxas = next((f for f in read if f.kind == "nvcc" and f.ptxas_sass), None)
    header = next((f for f in read if f.gcc_max is not None), None)
    gaps = ["min_driver"]
    lines = ["[[cuda]]", f"version = {_q(item.name)}"]
    sources = []
    if ptxas is not None:
        lines.append(f"sass = {_q(' '.join(ptxas.ptxas_sass))}")
        lines.append(f"ptx = {_q(' '.join(ptxas.ptxas_ptx))}")
        lines.append(f"targets = {_q(ptxas.evidence + ' (ptxas --help, --gpu-name)')}")
    if header is not None:
        if header.gcc_min is not None:
            lines.append(f"min_gcc = {header.gcc_min}")
        elif gcc_floor is not None:
            lines.append(f"min_gcc = {gcc_floor[0]}")
            sources.append(f"min_gcc as CUDA {gcc_floor[1]} (host_config.h states no lower bound; spack-cuda"
                           f" conflicts('%gcc@:{gcc_floor[0] - 1}', when='%cuda@11.4:') is open-ended)")
        lines.append(f"max_gcc = {header.gcc_max}")
        sources.append(f"{header.evidence} (crt/host_config.h: gcc > {header.gcc_max} refused)")
    else:
        gaps.append("max_gcc")
    lines.append(f"gaps = [{', '.join(_q(g) for g in gaps)}]")
    sources.append(_index_note(item))
    lines.append(f"source = {_q('; '.join(sources))}")
    more: list[str] = []
    if ptxas is not None:
        unknown = [n for n in ptxas.ptxas_sass if n.isdigit() and n not in capabilities]
        more.extend(f"sm_{n}: compute capability {int(n) // 10}.{int(n) % 10} is not in capabilities.toml"
                    for n in unknown)
    if ptxas is None or header is None:
        return "# " + "\n# ".join(lines) + "\n# (not written: ptxas or host_config.h not read)", tuple(more)
    return "\n".join(lines), tuple(more)


def library_row(kind: str, line: str, entries: Sequence[tuple[NewRelease, tuple[WheelFacts, ...]]]) -> str | None:
    """The [[cudnn]] / [[nccl]] row of a new line, from every CUDA major's project that lists it."""
    builds = sorted({f"{item.cuda_major}.x" for item, _ in entries if item.cuda_major}, key=_v)
    lowest = {}
    evidence = []
    for item, read in entries:
        for facts in read:
            low = facts.lowest_sass()
            if low is not None and item.cuda_major is not None:
                lowest[str(item.cuda_major)] = str(low)
                evidence.append(facts.evidence)
    missing = [b for b in builds if b.split(".")[0] not in lowest]
    if kind == "cudnn" and missing:
        return None  # a cuDNN row needs lowest_cc for each build: left as a gap, not written
    lines = [f"[[{kind}]]", f"version = {_q(line)}", f"cuda = [{', '.join(_q(b) for b in builds)}]"]
    if lowest:
        lines.append("lowest_cc = { " + ", ".join(f"{_q(k)} = {_q(v)}" for k, v in sorted(lowest.items())) + " }")
    if missing:
        lines.append(f"gaps = [{', '.join(_q('lowest_cc.' + b.split('.')[0]) for b in missing)}]")
    sources = [_index_note(item) for item, _ in entries] + evidence
    lines.append(f"source = {_q('; '.join(sources))}")
    return "\n".join(lines)


def insert_rows(text: str, table: str, rows: Sequence[str]) -> str:
    """``text`` with ``rows`` after the last ``[[table]]`` row (or before ``[sources]``, or at the end)."""
    if not rows:
        return text
    block = "\n" + "\n\n".join(rows) + "\n"
    headers = [m.start() for m in re.finditer(rf"^\[\[{re.escape(table)}\]\]$", text, re.M)]
    if not headers:
        at = text.find("\n[sources]")
        if at < 0:
            return text.rstrip("\n") + "\n" + block
        return text[:at].rstrip("\n") + "\n" + block + text[at:]
    end = len(text)
    base = text.find("\n", headers[-1]) + 1 or len(text)  # after the last row's header line
    for m in re.finditer(r"^(\[.*\]|#.*)$", text[base:], re.M):
        line = m.group(1)
        if line.startswith(f"[[{table}."):
            continue
        start = base + m.start()
        if line.startswith("#") and not text[:start].endswith("\n\n"):
            continue
        end = start
        break
    head = text[:end].rstrip("\n")
    return head + "\n" + block + ("\n" + text[end:] if end < len(text) else "")


def diff(path_label: str, before: str, after: str) -> list[str]:
    return list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"a/{path_label}", f"b/{path_label}", lineterm="", n=2
        )
    )


def record_text(before: str | None, checked: str, newest: Sequence[tuple[str, str]]) -> str:
    """index.toml: the date of the last refresh and the newest release of each tracked project."""
    del before
    lines = [
        "# What `srcbuild knowledge refresh` last found on the package index: the date and the newest",
        "# release of each tracked project. Written by refresh; `knowledge refresh --dry-run` compares.",
        "",
        f'checked = "{checked}"',
        "",
    ]
    for project, version in newest:
        lines += ["[[project]]", f'name = "{project}"', f'newest = "{version}"', ""]
    return "\n".join(lines).rstrip("\n") + "\n"
