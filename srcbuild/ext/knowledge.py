"""Per-package build knowledge for extensions: ``srcbuild/ext/data/extensions.toml``.

Each row says which build variables and setup.py options a known extension needs for a CUDA
build without a GPU in the machine (and for a CPU-only one), with the upstream file that states
it, and the torch versions each release supports where upstream states them (``torch``: the
release's version -> a PEP 440 specifier of torch versions, with ``torch_source``). A package
without a row gets ``GENERIC``: FORCE_CUDA=1 for a CUDA build, nothing else, and
torch.utils.cpp_extension reads TORCH_CUDA_ARCH_LIST either way. ``parallel`` is an exact edit of
the sdist that restores parallel compiles, ``nvcc_threads`` the variable its setup.py reads extra
nvcc flags from (``srcbuild.ext.resolve`` passes ``--threads N`` through it).
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild.files import sha256_file
from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

DATA_FILE = Path(__file__).resolve().parent / "data" / "extensions.toml"
GENERIC_SOURCE = (
    "pytorch/pytorch: torch/utils/cpp_extension.py (TORCH_CUDA_ARCH_LIST; CUDAExtension compiles with the "
    "CUDA_HOME nvcc); FORCE_CUDA=1 is the switch setup.py files of CUDA extensions share"
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ExtensionDataError(Exception):
    """A malformed row of extensions.toml: a bug in srcbuild, named by file and row."""


@record
class SourceEdit:
    """One exact text replaced in one file of an sdist, checked: the text must be there once (else
    the sdist is built as it ships, and the build says so). ``source`` is where the text is.
    ``prepend`` names a file of srcbuild's (``srcbuild/ext/data``) whose lines go before the edited
    file's, such as ``build_ext_at_once.py.in``, which builds a package's extensions side by side."""

    file: str  # relative to the sdist's top directory: "setup.py"
    old: str
    new: str
    source: str
    prepend: str = ""  # a file name in srcbuild/ext/data; "" for none

    @property
    def prepend_path(self) -> Path | None:
        return DATA_FILE.parent / self.prepend if self.prepend else None

    def prepend_sha256(self) -> str:
        """The sha256 of the prepended lines ("" for none): the edit, and so the cache key, holds it."""
        return _data_file_sha256(self.prepend) if self.prepend else ""

    def describe(self) -> str:
        before = f"; before it: {self.prepend} (sha256 {self.prepend_sha256()[:16]})" if self.prepend else ""
        return f"{self.file}: {self.old} -> {self.new}{before}"

    def to_json(self) -> dict[str, str]:
        out = {"file": self.file, "replace": self.old, "by": self.new, "source": self.source}
        return {**out, "prepend": self.prepend} if self.prepend else out


@functools.cache
def _data_file_sha256(name: str) -> str:
    """The sha256 of srcbuild's own data file ``name``: read once a process (the plan's command, its
    description and the cache key's edit variable all name it)."""
    return sha256_file(DATA_FILE.parent / name)


@record
class NvccThreads:
    """The variable a package's setup.py reads extra nvcc flags from (``NVCC_FLAGS``, split on
    spaces into ``extra_compile_args["nvcc"]``), through which a CUDA build for several archs passes
    nvcc's ``--threads N``; ``source`` is where the setup.py reads it."""

    variable: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"variable": self.variable, "source": self.source}


@record
class ExtensionKnowledge:
    """What building one extension from source needs."""

    name: str  # the index project, normalized ("torch-scatter")
    module: str  # what `import` names ("torch_scatter")
    cuda_env: tuple[tuple[str, str], ...]
    cpu_env: tuple[tuple[str, str], ...]
    cuda_options: tuple[str, ...]  # setup.py options (pip --config-settings --build-option=...)
    cpu_options: tuple[str, ...]
    requires: tuple[str, ...]  # other extensions it builds against (built first)
    source: str
    known: bool = True
    torch: tuple[tuple[str, str], ...] = ()  # (release, torch specifier) where upstream states it
    torch_source: str = ""
    switches: tuple[tuple[str, str], ...] = ()  # (variable, what it does) a recipe's [build] env may set
    parallel: SourceEdit | None = None  # the edit of its sdist that restores parallel compiles
    nvcc_threads: NvccThreads | None = None  # where nvcc's --threads reaches its nvcc commands

    def torch_range(self, release: str) -> str | None:
        """The torch versions ``release`` supports (a specifier such as ``>=1.4.0``), None when unstated."""
        try:
            wanted = Version(release)
        except InvalidVersion:
            return None
        return next((spec for rel, spec in self.torch if Version(rel) == wanted), None)

    def env(self, cuda: bool) -> tuple[tuple[str, str], ...]:
        return self.cuda_env if cuda else self.cpu_env

    def options(self, cuda: bool) -> tuple[str, ...]:
        return self.cuda_options if cuda else self.cpu_options

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "known": self.known,
            "cuda_env": dict(self.cuda_env),
            "cpu_env": dict(self.cpu_env),
            "cuda_options": list(self.cuda_options),
            "cpu_options": list(self.cpu_options),
            "requires": list(self.requires),
            "source": self.source,
            "torch": dict(self.torch),
            "torch_source": self.torch_source,
            "switches": dict(self.switches),
            "parallel": self.parallel.to_json() if self.parallel else None,
            "nvcc_threads": self.nvcc_threads.to_json() if self.nvcc_threads else None,
        }


def normalize(name: str) -> str:
    """PEP 503's normalized project name: ``Torch_Scatter`` -> ``torch-scatter``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def generic(name: str) -> ExtensionKnowledge:
    """The generic path for a package srcbuild has no row for."""
    project = normalize(name)
    return ExtensionKnowledge(
        name=project,
        module=project.replace("-", "_"),
        cuda_env=(("FORCE_CUDA", "1"),),
        cpu_env=(),
        cuda_options=(),
        cpu_options=(),
        requires=(),
        source=GENERIC_SOURCE,
        known=False,
    )


def _env(row: dict[str, Any], key: str, where: str) -> tuple[tuple[str, str], ...]:
    table = row.get(key, {})
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and _ENV_NAME.match(k) and isinstance(v, str) for k, v in table.items()
    ):
        raise ExtensionDataError(f"{where}: {key} must be a table of NAME = \"value\" strings")
    return tuple(sorted(table.items()))


def _strings(row: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = row.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ExtensionDataError(f"{where}: {key} must be an array of strings")
    return tuple(values)


def _torch(row: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    table = row.get("torch", {})
    if not isinstance(table, dict):
        raise ExtensionDataError(f"{where}: torch must be a table of \"RELEASE\" = \"SPECIFIER\" strings")
    if table and not (isinstance(row.get("torch_source"), str) and row["torch_source"]):
        raise ExtensionDataError(f"{where}: torch_source is required with torch (where upstream states the ranges)")
    out = []
    for release, spec in table.items():
        try:
            Version(release)
            SpecifierSet(spec)
        except (InvalidVersion, InvalidSpecifier, TypeError):
            raise ExtensionDataError(
                f"{where}: torch.{release!r} = {spec!r} must map a release to a torch specifier (\">=1.4.0\")"
            ) from None
        out.append((release, spec))
    return tuple(out)


def _edit(row: dict[str, Any], key: str, where: str) -> SourceEdit | None:
    value = row.get(key)
    if value is None:
        return None
    fields = ("file", "replace", "by", "source")
    if not isinstance(value, dict) or not set(fields) <= set(value) <= {*fields, "prepend"} or not all(
        isinstance(value[f], str) and value[f] for f in value
    ):
        raise ExtensionDataError(f"{where}: {key} must be a table of {', '.join(fields)} and maybe prepend (strings)")
    if ".." in Path(value["file"]).parts or Path(value["file"]).is_absolute():
        raise ExtensionDataError(f"{where}: {key}.file must be a path inside the sdist")
    prepend = value.get("prepend", "")
    if prepend and (Path(prepend).name != prepend or not (DATA_FILE.parent / prepend).is_file()):
        raise ExtensionDataError(f"{where}: {key}.prepend must name a file in {DATA_FILE.parent.name}/")
    return SourceEdit(value["file"], value["replace"], value["by"], value["source"], prepend)


def _nvcc_threads(row: dict[str, Any], key: str, where: str) -> NvccThreads | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"variable", "source"} or not all(
        isinstance(v, str) and v for v in value.values()
    ) or not _ENV_NAME.match(value["variable"]):
        raise ExtensionDataError(f"{where}: {key} must be a table of variable (a NAME) and source (strings)")
    return NvccThreads(value["variable"], value["source"])


def parse_rows(data: dict[str, Any], path: Path = DATA_FILE) -> dict[str, ExtensionKnowledge]:
    """The rows of a parsed extensions.toml, by normalized name."""
    known = {"name", "module", "cuda_env", "cpu_env", "cuda_options", "cpu_options", "requires", "source", "torch",
             "torch_source", "switches", "parallel", "nvcc_threads"}
    rows: dict[str, ExtensionKnowledge] = {}
    for i, row in enumerate(data.get("extension", [])):
        where = f"{path.name}: [[extension]] #{i + 1}"
        extra = sorted(set(row) - known)
        if extra:
            raise ExtensionDataError(f"{where}: unknown key {extra[0]!r}")
        for key in ("name", "module", "source"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise ExtensionDataError(f"{where}: {key} is required (a string)")
        name = normalize(row["name"])
        if name in rows:
            raise ExtensionDataError(f"{where}: {name} is listed twice")
        rows[name] = ExtensionKnowledge(
            name=name,
            module=row["module"],
            cuda_env=_env(row, "cuda_env", where),
            cpu_env=_env(row, "cpu_env", where),
            cuda_options=_strings(row, "cuda_options", where),
            cpu_options=_strings(row, "cpu_options", where),
            requires=tuple(normalize(r) for r in _strings(row, "requires", where)),
            source=row["source"],
            torch=_torch(row, where),
            torch_source=str(row.get("torch_source", "")),
            switches=_env(row, "switches", where),
            parallel=_edit(row, "parallel", where),
            nvcc_threads=_nvcc_threads(row, "nvcc_threads", where),
        )
    return rows


@functools.lru_cache(maxsize=1)
def load_rows() -> dict[str, ExtensionKnowledge]:
    with DATA_FILE.open("rb") as handle:
        return parse_rows(tomllib.load(handle))


def knowledge_for(name: str) -> ExtensionKnowledge:
    """The row for ``name`` (any spelling pip accepts), or the generic path."""
    return load_rows().get(normalize(name)) or generic(name)
