"""What a build environment must contain: ``EnvSpec`` and how a recipe becomes one.

``env_spec_for(recipe)`` adds, in order: the recipe's Python; the build dependencies of the torch
tag's era (``srcbuild/knowledge/data/build_deps.toml``, from the upstream READMEs); the pins the knowledge base says
old tags need on today's tools (``setuptools<=59.5.0``, ``numpy<2``, ``cmake<4``: folded into the
package they constrain); and the recipe's own ``[env]`` table (conda packages, channels, pip).
MAGMA is not part of it: it is a toolchain piece (``magma-cudaXY`` of the pytorch channel in a
prefix of its own, ``srcbuild.toolchain``), so a CUDA build does not need a conda environment.

``EnvSpec.hash()`` is the sha256 of the canonical JSON of (python, conda, pip, channels, platform,
cuda):
the environment's identity, its directory name and the lockfile's ``content_hash``. Channel routing
(aliases, mirrors) and the record of where each package came from are not part of it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from srcbuild.envs.channels import ChannelRouting, routing_from
from srcbuild.errors import RecipeError
from srcbuild.packages import PACKAGES
from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA_FILE = Path(__file__).resolve().parents[1] / "knowledge" / "data" / "build_deps.toml"
PLATFORM = "linux-64"
DEFAULT_CHANNELS = ("conda-forge",)
SPEC_FORMAT = "srcbuild-env-spec/1"
COMPILER_PACKAGES = frozenset(
    {
        "gcc",
        "gxx",
        "gcc_linux-64",
        "gxx_linux-64",
        "gcc_impl_linux-64",
        "gxx_impl_linux-64",
        "c-compiler",
        "cxx-compiler",
    }
)


def package_name(spec: str) -> str:
    """The package a conda match spec or pip requirement names: ``"numpy <2"`` -> ``numpy``."""
    match = re.match(r"\s*([A-Za-z0-9_.\-]+)", spec.split("::")[-1])
    return match.group(1).lower() if match else spec.strip().lower()


@record
class EnvSpec:
    """A build environment, as data: everything that decides what gets installed."""

    python: str  # "3.8"
    conda: tuple[str, ...] = ()  # conda match specs, python excluded
    pip: tuple[str, ...] = ()  # pip requirements installed after the conda packages
    channels: tuple[str, ...] = DEFAULT_CHANNELS
    platform: str = PLATFORM
    cuda: str | None = None  # the recipe's CUDA version: the `__cuda` virtual package when solving
    # conda spec -> the pip requirement that provides the same package ("" when pip cannot)
    pip_equivalents: tuple[tuple[str, str], ...] = ()
    origins: tuple[tuple[str, str], ...] = ()  # package name -> where it came from
    routing: ChannelRouting = field(default_factory=ChannelRouting)
    source: str | None = None  # the recipe file, for lockfile metadata

    def canonical(self) -> dict[str, Any]:
        return {
            "format": SPEC_FORMAT,
            "python": self.python,
            "conda": sorted(self.conda),
            "pip": sorted(self.pip),
            "channels": list(self.channels),
            "platform": self.platform,
            "cuda": self.cuda,
        }

    def hash(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def key(self) -> str:
        """The environment's directory name: the first 16 hex digits of the hash."""
        return self.hash()[:16]

    @property
    def python_spec(self) -> str:
        return f"python {self.python}.*"

    @property
    def conda_specs(self) -> tuple[str, ...]:
        """Everything the conda solver is asked for, Python first (and pip when pip packages follow)."""
        needs_pip = bool(self.pip) and "pip" not in {package_name(s) for s in self.conda}
        return (self.python_spec, *self.conda, *(("pip",) if needs_pip else ()))

    @property
    def conda_only(self) -> tuple[str, ...]:
        """Conda packages pip cannot provide (they rule out a plain venv)."""
        pip_form = dict(self.pip_equivalents)
        return tuple(s for s in self.conda if not pip_form.get(s))

    @property
    def wants_conda_compiler(self) -> bool:
        return any(package_name(s) in COMPILER_PACKAGES for s in self.conda)

    def as_pip_only(self) -> EnvSpec:
        """The same environment for a venv: every conda package through its pip equivalent."""
        pip_form = dict(self.pip_equivalents)
        moved = tuple(pip_form[s] for s in self.conda if pip_form.get(s))
        return replace(self, conda=(), pip=(*moved, *self.pip), channels=(), pip_equivalents=())

    def origin(self, package: str) -> str:
        return dict(self.origins).get(package_name(package), "")

    def to_json(self) -> dict[str, Any]:
        return {
            **self.canonical(),
            "hash": self.hash(),
            "key": self.key,
            "pip_equivalents": dict(self.pip_equivalents),
            "origins": dict(self.origins),
            "routing": self.routing.to_json(),
            "source": self.source,
        }


@record
class BuildDeps:
    """The table in ``srcbuild/knowledge/data/build_deps.toml``."""

    eras: tuple[tuple[SpecifierSet, tuple[str, ...], str], ...]
    pip_names: Mapping[str, str]
    python36_extra: tuple[str, ...]

    def era_for(self, torch_version: str) -> tuple[tuple[str, ...], str]:
        version = Version(torch_version)
        for spec, packages, source in self.eras:
            if spec.contains(version, prereleases=True):
                return packages, source
        return (), "no era row matches"

    def pip_name(self, conda_name: str) -> str:
        return self.pip_names.get(conda_name, conda_name)


@lru_cache(maxsize=1)
def load_build_deps(path: Path = DATA_FILE) -> BuildDeps:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    eras = tuple((SpecifierSet(e["torch"]), tuple(e["packages"]), e["source"]) for e in data["era"])
    return BuildDeps(
        eras=eras,
        pip_names=dict(data.get("pip_names", {})),
        python36_extra=tuple(data.get("python36_extra", {}).get("packages", ())),
    )


def torch_version_of(tag: str) -> str:
    """``v1.7.1`` -> ``1.7.1``; a tag that is not a version is a RecipeError."""
    text = tag[1:] if tag.startswith("v") else tag
    try:
        return str(Version(text))
    except InvalidVersion:
        raise RecipeError(
            f"torch tag {tag!r} is not a version, so its build dependencies are unknown",
            "pin a release tag such as v1.7.1, or list the build dependencies in the recipe's [env] table",
        ) from None


def knowledge_pins(torch_version: str, kb: Any = None) -> list[tuple[str, str]]:
    """The pip pins the knowledge base gives for ``torch_version``, each with the reason it gives."""
    if kb is None:
        from srcbuild.knowledge import load_knowledge

        kb = load_knowledge()
    pins = kb.build_pins(torch_version)
    reasons = {getattr(r, "what", ""): getattr(r, "why", "") for r in getattr(pins, "reasons", ())}
    out = []
    for pin in getattr(pins, "pip", pins):
        why = reasons.get(str(pin))
        out.append((str(pin), f"build pin ({why})" if why else "build pin (knowledge base)"))
    return out


def paired_pins(recipe: Any, kb: Any = None) -> list[tuple[str, str]]:
    """The build-time pip pins of the releases of the packages built against torch the recipe pins
    (torchvision, torchaudio), each with the reason the knowledge base gives; their run-time pins
    (pillow) are not build tools."""
    pinned = [(spec.name, pin) for spec in PACKAGES.values()
              if spec.needs_torch_wheel and (pin := recipe.pin_of(spec.recipe_table)) is not None]
    if not pinned:
        return []
    if kb is None:
        from srcbuild.knowledge import load_knowledge

        kb = load_knowledge()
    out: list[tuple[str, str]] = []
    for name, pin in pinned:
        version = torch_version_of(pin.tag)
        out += [(str(p), f"{name} {version} build pin") for p in kb.package_build_pins(name, version).pip]
    return out


def _implies(held: Specifier, wanted: Specifier) -> bool:
    """Whether every version ``held`` allows is one ``wanted`` allows, for bounds on the same side
    (``<=59.5.0`` implies ``<77``); False where that takes more than comparing two bounds."""
    if held == wanted:
        return True
    uppers, lowers = ("<", "<="), (">", ">=")
    for side, tighter in ((uppers, Version.__le__), (lowers, Version.__ge__)):
        if held.operator in side and wanted.operator in side:
            try:
                a, b = Version(held.version), Version(wanted.version)
            except InvalidVersion:
                return False
            if held.operator == wanted.operator or held.operator == side[0]:
                return bool(tighter(a, b))  # "<A" implies "<=B" (and "<B") when A <= B
            return a != b and bool(tighter(a, b))  # "<=A" implies "<B" when A < B
    return False


def _specifier(text: str) -> Specifier | None:
    try:
        return Specifier(text)
    except InvalidSpecifier:
        return None


def _conda_form(requirement: Requirement) -> str:
    spec = ",".join(_ordered([str(s) for s in requirement.specifier]))
    return f"{requirement.name.lower()} {spec}".strip()


def _ordered(constraints: list[str]) -> list[str]:
    """Lower bounds before upper bounds: ``>=3.5,<4``."""
    return sorted(constraints, key=lambda c: (not c.startswith(">"), c))


class _Builder:
    """Accumulates packages in order, merging constraints on the same name."""

    def __init__(self, deps: BuildDeps) -> None:
        self.deps = deps
        self.conda: dict[str, list[str]] = {}  # name -> constraints
        self.pip_form: dict[str, str] = {}  # name -> pip name ("" when pip cannot provide it)
        self.pip: dict[str, str] = {}  # name -> requirement
        self.origins: dict[str, str] = {}

    def add_conda(self, spec: str, origin: str, pip_name: str | None) -> None:
        name = package_name(spec)
        rest = spec.strip()[len(name) :].strip() if spec.strip().lower().startswith(name) else ""
        constraints = self.conda.setdefault(name, [])
        if rest and rest not in constraints:
            constraints.append(rest)
        if name not in self.pip_form or pip_name == "":
            self.pip_form[name] = "" if pip_name == "" else (pip_name or self.deps.pip_name(name))
        self.origins.setdefault(name, origin)

    def add_pin(self, pin: str, origin: str, python: str) -> None:
        try:
            requirement = Requirement(pin)
        except InvalidRequirement:
            raise RecipeError(f"build pin {pin!r} is not a pip requirement") from None
        if requirement.marker is not None and not requirement.marker.evaluate(
            {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux"}
        ):
            return  # e.g. `dataclasses; python_version < "3.7"` for a Python 3.8 environment
        requirement.marker = None
        conda_name = {v.lower(): k for k, v in self.deps.pip_names.items()}.get(
            requirement.name.lower(), requirement.name.lower()
        )
        if conda_name in self.conda:
            spec = _conda_form(requirement).split(" ", 1)
            if len(spec) == 2 and spec[1] not in self.conda[conda_name]:
                self.conda[conda_name].append(spec[1])
            self.origins[conda_name] = f"{self.origins[conda_name]}; {origin}"
        else:
            self.pip[requirement.name.lower()] = str(requirement)
            self.origins.setdefault(requirement.name.lower(), origin)

    def add_narrowing_pin(self, pin: str, origin: str, python: str) -> None:
        """Add ``pin`` where the constraints already there do not imply it, dropping those it
        implies (``setuptools <80`` with ``setuptools<77`` becomes ``setuptools <77``); a pin they
        imply changes nothing, so an environment that already has it keeps its spec and hash."""
        requirement = Requirement(pin)
        name = requirement.name.lower()
        conda_name = {v.lower(): k for k, v in self.deps.pip_names.items()}.get(name, name)
        held = self.conda.get(conda_name)
        if held is None and name in self.pip:
            held = [str(Requirement(self.pip[name]).specifier)]
        if held is None:
            self.add_pin(pin, origin, python)
            return
        parts = [part for text in held for part in text.replace(" ", "").split(",") if part]
        have = {part: _specifier(part) for part in parts}  # None: a conda-only form ("1.2.*"), kept as it is
        wanted = list(requirement.specifier)
        if all(any(h is not None and _implies(h, w) for h in have.values()) for w in wanted):
            return
        kept = [part for part, h in have.items() if h is None or not any(_implies(w, h) and w != h for w in wanted)]
        merged = _ordered(list(dict.fromkeys([*kept, *(str(w) for w in wanted)])))
        if conda_name in self.conda:
            self.conda[conda_name] = merged
            self.origins[conda_name] = f"{self.origins[conda_name]}; {origin}"
        else:
            narrowed = Requirement(self.pip[name])  # a pin added above: its extras and marker stay
            narrowed.specifier = SpecifierSet(",".join(merged))
            self.pip[name] = str(narrowed)
            self.origins[name] = f"{self.origins.get(name, '')}; {origin}".lstrip("; ")

    def conda_specs(self) -> tuple[str, ...]:
        return tuple(f"{name} {','.join(_ordered(c))}".strip() for name, c in self.conda.items())

    def equivalents(self) -> tuple[tuple[str, str], ...]:
        out = []
        for name, constraints in self.conda.items():
            constraints = _ordered(constraints)
            spec = f"{name} {','.join(constraints)}".strip()
            pip_name = self.pip_form.get(name, "")
            if not pip_name:
                out.append((spec, ""))
                continue
            pip_spec = ",".join(c.replace(" ", "") for c in constraints if not c.startswith("*"))
            pip_spec = re.sub(r"(^|,)(\d[^,]*)", r"\1==\2", pip_spec)  # conda "1.2.*" -> "==1.2.*"
            out.append((spec, f"{pip_name}{pip_spec}"))
        return tuple(out)


def env_spec_for(
    recipe: Any,
    kb: Any = None,
    channels_override: Sequence[str] | None = None,
    channel_alias: str | None = None,
    channel_mirrors: Sequence[str] = (),
    *,
    environ: Mapping[str, str],
) -> EnvSpec:
    """The build environment a recipe needs (pure apart from reading the data tables)."""
    deps = load_build_deps()
    version = torch_version_of(recipe.torch.tag)
    builder = _Builder(deps)
    era_packages, _source = deps.era_for(version)
    for name in era_packages:
        builder.add_conda(name, f"torch {version} build dependency", None)
    if recipe.toolchain.python.startswith("3.6"):
        for name in deps.python36_extra:
            builder.add_conda(name, "Python 3.6 only (setup.py install_requires)", None)
    channels: list[str] = [*recipe.env.channels, *DEFAULT_CHANNELS]  # strict priority: defaults before extras
    for pin, why in knowledge_pins(version, kb):
        builder.add_pin(pin, why, recipe.toolchain.python)
    for pin, why in paired_pins(recipe, kb):  # one environment serves each package of the recipe
        builder.add_narrowing_pin(pin, why, recipe.toolchain.python)
    for spec in recipe.env.conda:  # a package pip also provides keeps its pip form; others are conda-only
        builder.add_conda(spec, "recipe [env] conda", None if package_name(spec) in builder.conda else "")
    for requirement in recipe.env.pip:
        builder.pip[package_name(requirement)] = requirement
        builder.origins[package_name(requirement)] = "recipe [env] pip"
    if channels_override:
        channels = list(channels_override)
    return EnvSpec(
        python=recipe.toolchain.python,
        cuda=recipe.toolchain.cuda,
        conda=builder.conda_specs(),
        pip=tuple(builder.pip.values()),
        channels=tuple(dict.fromkeys(channels)),
        pip_equivalents=builder.equivalents(),
        origins=tuple(builder.origins.items()),
        routing=routing_from(channel_alias, channel_mirrors, environ=environ),
        source=str(recipe.path) if getattr(recipe, "path", None) else None,
    )
