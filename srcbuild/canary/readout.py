"""What torch's CMake decided, read back, and every place it differs from the plan.

Three files of a configured build tree say it: ``CMakeCache.txt`` (``KEY:TYPE=VALUE``), the
configure summary torch prints (``--   USE_MPI   : ON``, ``--   CUDA version : 11.8``) and
``build.ninja`` (the ``-gencode`` flags on the CUDA compile lines). ``Readout.read`` parses them;
``compare`` checks each ``Expect`` the plan made (``srcbuild.plan.canary``) against them and
returns one ``Mismatch`` per difference, naming the plan's value, CMake's value and where CMake's
came from. Pure parsing and comparing: the canary handler reads the files and resolves paths.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from typing import Any

from srcbuild.patterns import LazyPattern
from srcbuild.records import record

ON = ("1", "ON", "TRUE", "YES", "Y")
_SUMMARY = LazyPattern(r"^--\s+([A-Za-z][\w ./+-]*?)\s*:\s*(.*?)\s*$")
_CACHE = LazyPattern(r"^([A-Za-z_][\w.+-]*):[A-Z_]+=(.*)$")
_GENCODE = LazyPattern(r"arch=compute_(\d+)\s*,\s*code=\[?([\w,]+)\]?")


def is_on(value: str | None) -> bool:
    return (value or "").strip().upper() in ON


def read_cache(text: str) -> dict[str, str]:
    """``CMakeCache.txt`` as a mapping (comments and blank lines skipped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _CACHE.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def read_summary(lines: Iterable[str]) -> dict[str, str]:
    """The ``-- KEY : VALUE`` lines of a configure log (a later line overrides an earlier one)."""
    out: dict[str, str] = {}
    for line in lines:
        m = _SUMMARY.match(line.rstrip())
        if m:
            out[m.group(1).strip()] = m.group(2)
    return out


def gencode_archs(ninja: str) -> tuple[frozenset[int], frozenset[int]]:
    """The SASS and PTX targets of every nvcc ``-gencode`` flag in ``build.ninja``."""
    sass: set[int] = set()
    ptx: set[int] = set()
    for _compute, codes in _GENCODE.findall(ninja):
        for code in codes.split(","):
            if code.startswith("sm_"):
                sass.add(int(code[3:]))
            elif code.startswith("compute_"):
                ptx.add(int(code[8:]))
    return frozenset(sass), frozenset(ptx)


def ninja_outputs(ninja: str) -> list[str]:
    """The explicit outputs of every ``build`` statement of ``build.ninja``."""
    outs: list[str] = []
    for line in ninja.splitlines():
        if line.startswith("build ") and ":" in line:
            head = line[len("build ") :].split(":", 1)[0]
            outs.extend(o for o in head.replace("$ ", "\0").split(" ") if o and o != "|")
    return [o.replace("\0", " ") for o in outs]


def find_output(outputs: Iterable[str], suffixes: Iterable[str]) -> str | None:
    """The first output ending in one of ``suffixes`` (tried in order), or None."""
    listed = list(outputs)
    for suffix in suffixes:
        for out in listed:
            if out == suffix or out.endswith("/" + suffix):
                return out
    return None


@record
class Readout:
    """What CMake decided, from one configured build tree."""

    cache: Mapping[str, str] = field(default_factory=dict)
    summary: Mapping[str, str] = field(default_factory=dict)
    sass: frozenset[int] = frozenset()
    ptx: frozenset[int] = frozenset()
    outputs: tuple[str, ...] = ()

    @classmethod
    def read(cls, cache_text: str, log_lines: Iterable[str], ninja_text: str) -> Readout:
        sass, ptx = gencode_archs(ninja_text)
        return cls(read_cache(cache_text), read_summary(log_lines), sass, ptx, tuple(ninja_outputs(ninja_text)))

    def value(self, where: str) -> str | None:
        """``cache:KEY`` or ``summary:KEY``: the value CMake recorded there, or None."""
        kind, _, key = where.partition(":")
        table = self.cache if kind == "cache" else self.summary
        return table.get(key)

    def first(self, places: Iterable[str]) -> tuple[str | None, str]:
        """The first of ``places`` that holds a value, and which it was."""
        listed = tuple(places)
        for where in listed:
            found = self.value(where)
            if found not in (None, ""):
                return found, where
        return None, " or ".join(listed)


@record
class Expect:
    """One thing the plan decided that CMake must have decided too.

    ``kind`` says how to compare: ``prefix`` (CMake's value starts with the plan's: a CUDA
    ``11.8`` against ``11.8.89``), ``path`` (the same file or directory once resolved), ``under``
    (CMake's path lies in the plan's directory), ``on`` (the plan's on/off, CMake's on/off),
    ``archs`` (the plan's ``3.7;5.0+PTX`` against the ``-gencode`` flags of build.ninja).
    """

    key: str  # stable id: "cuda-version", "mpi", ...
    label: str  # what it is, for the message: "CUDA version"
    plan: str  # the plan's value
    kind: str
    places: tuple[str, ...]  # where CMake's value is read: "cache:KEY", "summary:KEY"
    origin: str = ""  # where the plan's value comes from: "toolchain.cuda"
    when: str = ""  # "cache:KEY" or "summary:KEY" that must be on for the check to apply

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "plan": self.plan,
            "kind": self.kind,
            "places": list(self.places),
            "origin": self.origin,
        }


@record
class Mismatch:
    key: str
    label: str
    plan: str
    cmake: str
    where: str

    def line(self) -> str:
        return f"{self.label}: the plan has {self.plan}, CMake has {self.cmake} ({self.where})"

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "label": self.label, "plan": self.plan, "cmake": self.cmake, "where": self.where}


@record
class Checked:
    """One expectation as read back: CMake's value and where it came from."""

    key: str
    label: str
    plan: str
    cmake: str
    where: str
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "plan": self.plan, "cmake": self.cmake, "where": self.where,
                "ok": self.ok}


def _arch_plan(arch_list: str) -> tuple[frozenset[int], frozenset[int]]:
    sass: set[int] = set()
    ptx: set[int] = set()
    for token in re.split(r"[;\s]+", arch_list.strip()):
        if not token:
            continue
        number = token.removesuffix("+PTX")
        try:
            major, _, minor = number.partition(".")
            sm = int(major) * 10 + int(minor or 0)
        except ValueError:
            continue
        sass.add(sm)
        if token.endswith("+PTX"):
            ptx.add(sm)
    return frozenset(sass), frozenset(ptx)


def arch_text(sass: Iterable[int], ptx: Iterable[int]) -> str:
    parts = [f"sm_{s}" for s in sorted(sass)] + [f"compute_{p}" for p in sorted(ptx)]
    return " ".join(parts) or "none"


def check(expect: Expect, readout: Readout, resolve: Callable[[str], str] = lambda p: p) -> Checked | None:
    """``expect`` read back from ``readout`` (None when its ``when`` is off: nothing to check);
    ``resolve`` turns a path into its real path (the handler passes ``os.path.realpath``)."""
    if expect.when and not is_on(readout.value(expect.when)):
        return None
    if expect.kind == "archs":
        want_sass, want_ptx = _arch_plan(expect.plan)
        ok = want_sass == readout.sass and want_ptx <= readout.ptx
        where = "-gencode flags of build/build.ninja"
        return Checked(expect.key, expect.label, arch_text(want_sass, want_ptx),
                       arch_text(readout.sass, readout.ptx), where, ok)
    found, where = readout.first(expect.places)
    shown = found if found is not None else "nothing"
    if found is None:
        return Checked(expect.key, expect.label, expect.plan, "nothing", f"no {where}", False)
    if expect.kind == "on":
        ok = is_on(found) == is_on(expect.plan)
        return Checked(expect.key, expect.label, "ON" if is_on(expect.plan) else "OFF",
                       "ON" if is_on(found) else f"OFF ({shown})", where, ok)
    if expect.kind == "prefix":
        ok = found == expect.plan or found.startswith(expect.plan + ".")
    elif expect.kind == "path":
        ok = resolve(found) == resolve(expect.plan)
    elif expect.kind == "under":
        base = resolve(expect.plan).rstrip("/") + "/"
        ok = resolve(found).startswith(base) or resolve(found) == base.rstrip("/")
    else:
        ok = found == expect.plan
    return Checked(expect.key, expect.label, expect.plan, shown, where, ok)


def compare(
    expects: Iterable[Expect], readout: Readout, resolve: Callable[[str], str] = lambda p: p
) -> tuple[list[Checked], list[Mismatch]]:
    """Every expectation read back, and the mismatches among them."""
    checked = [c for c in (check(e, readout, resolve) for e in expects) if c is not None]
    bad = [Mismatch(c.key, c.label, c.plan, c.cmake, c.where) for c in checked if not c.ok]
    return checked, bad


def device_code_missing(
    arch_list: str, sass: Iterable[int], ptx: Iterable[int]
) -> list[str]:
    """The recipe archs (``3.7;5.0+PTX``) an object's kernels lack: ``sm_37`` or ``compute_50``."""
    want_sass, want_ptx = _arch_plan(arch_list)
    have_sass, have_ptx = set(sass), set(ptx)
    missing = [f"sm_{s}" for s in sorted(want_sass - have_sass)]
    return missing + [f"compute_{p}" for p in sorted(want_ptx - have_ptx)]
