"""Read recipe files: strict TOML validation, ``extends`` merging and the final ``Recipe``.

Every problem is a ``RecipeError`` with one line naming the file and the key path, with a
did-you-mean for unknown keys; nothing here raises anything else for a bad file.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from srcbuild.capability import ComputeCapability
from srcbuild.errors import RecipeError
from srcbuild.packages import PACKAGES
from srcbuild.paths import catalog_dir
from srcbuild.recipe.envcheck import check_env_entries
from srcbuild.recipe.model import (
    Build,
    EnvTable,
    ExtensionPin,
    Gpu,
    Mpi,
    Recipe,
    SourcePin,
    Toolchain,
)
from srcbuild.recipe.schema import (
    REQUIRED,
    Field,
    build_env_allowlist,
    changes_what_runs,
    control_character,
    recipe_name_reason,
    recipe_schema,
)
from srcbuild.tables import read_data_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older interpreters only
    import tomli as tomllib

# Bounds on what one recipe may make srcbuild read: the catalog's recipes are 1-3 KiB and extend at
# most one parent; a 60 MB file or a chain of 1,000 parents is not a recipe.
MAX_RECIPE_BYTES = 1024 * 1024
MAX_EXTENDS_DEPTH = 32

_TYPE_NAMES = {str: "a string", bool: "true or false", list: "an array", dict: "a table"}


def display_path(path: Path) -> str:
    """The path as a user would type it: relative to the current directory when inside it, with
    control characters written as escapes so a message stays one line."""
    try:
        cwd = os.getcwd()
    except OSError:  # the current directory was removed
        cwd = ""
    return _display(Path(path), cwd)


@lru_cache(maxsize=512)
def _display(path: Path, cwd: str) -> str:
    """``display_path`` for one working directory: loading the catalog asks for the same few paths
    about fifty times, and each answer resolves both paths through the file system."""
    try:
        text = str(path.resolve().relative_to(Path(cwd).resolve())) if cwd else str(path)
    except (ValueError, OSError):
        text = str(path)
    return "".join(c.encode("unicode_escape").decode("ascii") if not c.isprintable() else c for c in text)


@lru_cache(maxsize=256)
def shipped_recipe(path: Path) -> bool:
    """Whether ``path`` is a file of the built-in catalog (resolved once per path: hints ask it for
    every recipe doctor judges)."""
    return path.resolve().parent == catalog_dir().resolve()


def read_toml(path: Path) -> dict[str, Any]:
    if shipped_recipe(path):  # a catalog file is kept parsed, as the shipped data tables are
        try:
            return read_data_file(path, shipped=True)
        except (OSError, ValueError):
            pass  # the reading below says what is wrong with it
    where = display_path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_RECIPE_BYTES + 1)
        if len(raw) > MAX_RECIPE_BYTES:
            raise RecipeError(
                f"{where}: the file is larger than {MAX_RECIPE_BYTES // 1024} KiB; a recipe is a few KiB of TOML",
                "check that this is the recipe you meant",
            )
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise RecipeError(f"{where}: no such recipe file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(f"{where}: cannot read: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per level of [[[...]]] or {a={b=...}}
        raise RecipeError(f"{where}: invalid TOML: arrays or tables nested too deeply") from None


def _did_you_mean(key: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(choices)})"


def _type_reason(value: object, field: Field) -> str | None:
    kind = field.kind
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'{value!r} must be a string (write "{value}" in quotes)'
    if not isinstance(value, kind):
        want = _TYPE_NAMES.get(kind, str(kind)) if isinstance(kind, type) else "a value"
        return f"{value!r} must be {want}"
    return None


def validate_table(data: dict[str, Any], where: str) -> None:
    """Check one file's keys, types and values against the schema (before merging)."""
    schema = recipe_schema()
    for key, value in data.items():
        if key not in schema:
            raise RecipeError(f"{where}: {_show(key)}: unknown key{_did_you_mean(key, list(schema))}")
        spec = schema[key]
        if isinstance(spec, dict):
            if not isinstance(value, dict):
                raise RecipeError(f"{where}: {key}: must be a table ([{key}]), not {_short(value)}")
            for sub, subvalue in value.items():
                if sub not in spec:
                    raise RecipeError(f"{where}: {key}.{_show(sub)}: unknown key{_did_you_mean(sub, list(spec))}")
                _validate_value(subvalue, spec[sub], f"{where}: {key}.{sub}")
        else:
            _validate_value(value, spec, f"{where}: {key}")


def _validate_value(value: object, field: Field, prefix: str) -> None:
    control = control_character(value)
    if control:
        raise RecipeError(f"{prefix}: {_short(value)} holds a control character ({control}); values are one line")
    reason = _type_reason(value, field)
    if reason:
        raise RecipeError(f"{prefix}: {reason}")
    if field.item_kind is not None:
        assert isinstance(value, list)
        for i, item in enumerate(value):
            if not isinstance(item, field.item_kind):
                want = _TYPE_NAMES.get(field.item_kind, "a value")
                raise RecipeError(f"{prefix}[{i}]: {item!r} must be {want}")
            if field.item_check is not None:
                item_reason = field.item_check(item)
                if item_reason:
                    raise RecipeError(f"{prefix}[{i}]: {item_reason}")
    if field.check is not None:
        check_reason = field.check(value)
        if check_reason:
            raise RecipeError(f"{prefix}: {check_reason}")


def _show(key: str) -> str:
    """A key for a message: as written, or quoted with escapes when it holds a control character."""
    return key if key.isprintable() and key else _short(key)


def _short(value: object) -> str:
    """A value for a message: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _origins(data: dict[str, Any], where: str) -> dict[str, str]:
    """``where`` for each key ``data`` sets (a table's keys as ``table.key``)."""
    out: dict[str, str] = {}
    for key, value in data.items():
        out[key] = where
        if isinstance(value, dict):
            out.update({f"{key}.{sub}": where for sub in value})
    return out


def merge_tables(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; any other value in the child replaces the parent's."""
    out = dict(parent)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_tables(out[key], value)
        else:
            out[key] = value
    return out


class RecipeLoader:
    """Loads recipes, finding ``extends`` parents next to the child and in the search dirs."""

    def __init__(self, recipe_dirs: Sequence[Path], patches_dirs: Sequence[Path]) -> None:
        self.recipe_dirs = tuple(recipe_dirs)
        self.patches_dirs = tuple(patches_dirs)

    def find_parent(self, name: str, child: Path) -> Path | None:
        for directory in (child.parent, *self.recipe_dirs):
            candidate = directory / f"{name}.toml"
            try:
                if candidate.is_file():
                    return candidate
            except OSError:  # a name the file system refuses (too long): not there
                continue
        return None

    def load(self, path: Path) -> Recipe:
        path = Path(path)
        where = display_path(path)
        merged, chain, origins = self._merged(path, [])
        return self._build(merged, path, where, tuple(chain), origins)

    def _merged(self, path: Path, seen: list[Path]) -> tuple[dict[str, Any], list[str], dict[str, str]]:
        """The recipe's data merged over its parents', the names of its parents, and which file set
        each key (``toolchain.cudnn`` -> ``kepler-k80-cu118.toml``)."""
        where = display_path(path)
        data = read_toml(path)
        validate_table(data, where)
        mine = _origins(data, where)
        parent_name = data.get("extends")
        if parent_name is None:
            return data, [], mine
        resolved = path.resolve()
        seen = [*seen, resolved]
        parent = self.find_parent(parent_name, path)
        if parent is None:
            raise RecipeError(
                f"{where}: extends: no recipe named '{parent_name}' "
                f"(looked next to this file and in {', '.join(display_path(d) for d in self.recipe_dirs)})"
            )
        if parent.resolve() in seen:
            names = [p.stem for p in seen] + [parent.stem]
            raise RecipeError(f"{where}: extends: cycle {' -> '.join(names)}")
        if len(seen) >= MAX_EXTENDS_DEPTH:
            raise RecipeError(
                f"{display_path(seen[0])}: extends: more than {MAX_EXTENDS_DEPTH} recipes deep "
                f"(stopped at {where}, which extends '{parent_name}')",
                "let the recipe extend a catalog recipe directly instead of a chain of files",
            )
        parent_data, chain, origins = self._merged(parent, seen)
        child = {k: v for k, v in data.items() if k != "extends"}
        parent_data = {k: v for k, v in parent_data.items() if k not in ("name", "extends")}
        return merge_tables(parent_data, child), [parent_name, *chain], {**origins, **mine}

    def _build(
        self, data: dict[str, Any], path: Path, where: str, chain: tuple[str, ...], origins: dict[str, str]
    ) -> Recipe:
        def at(dotted: str) -> str:
            """``where: key``, and the file that set the key when a parent did."""
            origin = origins.get(dotted, where)
            return f"{where}: {dotted}" + (f" (set in {origin})" if origin != where else "")

        for dotted in REQUIRED:
            table, key = dotted.split(".")
            if key not in data.get(table, {}):
                raise RecipeError(f"{where}: {dotted}: required key is missing")
        tool = data["toolchain"]
        cuda = None if tool["cuda"] == "none" else tool["cuda"]
        cudnn = None if tool.get("cudnn") in (None, "none") else tool["cudnn"]  # "none": a parent's is removed
        toolchain = Toolchain(python=tool["python"], gcc=tool["gcc"], cuda=cuda, cudnn=cudnn)
        gpu_data = data.get("gpu", {})
        arch_list = [ComputeCapability.parse(a) for a in gpu_data.get("arch", [])]
        if len(set(arch_list)) != len(arch_list):
            dup = next(str(a) for a in arch_list if arch_list.count(a) > 1)
            raise RecipeError(f"{at('gpu.arch')}: {dup!r} is listed twice")
        if cuda is None:
            if arch_list:
                raise RecipeError(
                    f'{at("gpu.arch")}: a CPU-only build (toolchain.cuda = "none") compiles no kernels; '
                    'remove gpu.arch (arch = [] in a recipe that extends one) or set toolchain.cuda'
                )
            if toolchain.cudnn is not None:
                raise RecipeError(
                    f'{at("toolchain.cudnn")}: cuDNN needs CUDA, but toolchain.cuda = "none"',
                    'set cudnn = "none" to build without it',
                )
        elif not arch_list:
            raise RecipeError(f"{at('gpu.arch')}: required for a CUDA build (the compute capabilities to compile for)")
        gpu = Gpu(arch=tuple(arch_list), ptx=bool(gpu_data.get("ptx", False)))
        mpi_data = data.get("mpi", {})
        mpi = Mpi(
            enabled=bool(mpi_data.get("enabled", False)),
            implementation=mpi_data.get("implementation", "openmpi"),
            version=mpi_data.get("version"),
        )
        if mpi.enabled and mpi.version is None:
            enabled = origins.get("mpi.enabled", where)
            set_in = f" (set in {enabled})" if enabled != where else ""
            raise RecipeError(f"{where}: mpi.version: required when mpi.enabled = true{set_in}")
        build_data = data.get("build", {})
        patches = tuple(build_data.get("patches", []))
        patch_files = tuple(self._find_patch(p, i, path, where) for i, p in enumerate(patches))
        build_env = tuple(sorted(build_data.get("env", {}).items()))
        allow_override = bool(build_data.get("allow_env_override", False))
        overrides = [name for name, value in build_env if changes_what_runs(name, value)]
        if overrides and not allow_override:
            allow = build_env_allowlist()
            listed = [(n, v) for n, v in build_env if n in overrides and allow.kind(n) is not None]
            if listed:
                name, value = listed[0]
                raise RecipeError(
                    f"{at('build.env')}: {allow.value_reason(name, value)}; a value other than that is "
                    "refused unless [build] allow_env_override = true",
                    "the build switches and the values each takes are listed in srcbuild/recipe/data/"
                    "build_env.toml (docs/security.md)",
                )
            raise RecipeError(
                f"{at('build.env')}: {', '.join(overrides)} would change which programs run or what they "
                "load; refused unless [build] allow_env_override = true",
                "[build] env takes the build switches torch, torchvision and the extensions document "
                "(USE_*, BUILD_*, MAX_JOBS, TORCH_CUDA_ARCH_LIST, CMAKE_BUILD_TYPE ...: srcbuild/recipe/data/"
                "build_env.toml; docs/security.md); add allow_env_override = true under [build] only if the "
                "recipe needs more",
            )
        build = Build(
            env=build_env,
            patches=patches,
            patch_files=patch_files,
            allow_env_override=allow_override,
            compiler_cache=build_data.get("compiler_cache"),
            portable=build_data.get("portable"),
        )
        env_data = data.get("env", {})
        env = EnvTable(
            conda=tuple(check_env_entries(env_data.get("conda", []), "env.conda", where)),
            channels=tuple(check_env_entries(env_data.get("channels", []), "env.channels", where)),
            pip=tuple(check_env_entries(env_data.get("pip", []), "env.pip", where, allow_override)),
        )
        extensions = tuple(
            ExtensionPin(name=e["name"], version=e.get("version"), git=e.get("git")) for e in data.get("extensions", [])
        )
        pins: list[tuple[str, SourcePin]] = []
        for spec in PACKAGES.values():  # torch's table is required (REQUIRED); the others pin when present
            pinned = data.get(spec.recipe_table)
            if pinned is None:
                continue
            if "tag" not in pinned:
                raise RecipeError(f"{where}: {spec.recipe_table}.tag: required key is missing")
            pins.append((spec.recipe_table, _pin(pinned, spec.default_repo)))
        torch = dict(pins)["torch"]
        if "name" not in data:
            reason = recipe_name_reason(path.stem)
            if reason:
                raise RecipeError(
                    f"{where}: the file name gives the recipe's name, and {reason}",
                    'rename the file, or set name = "..." in it',
                )
        return Recipe(
            name=data.get("name", path.stem),
            description=data.get("description", ""),
            torch=torch,
            pins=tuple((table, pin) for table, pin in pins if table != "torch"),
            toolchain=toolchain,
            gpu=gpu,
            mpi=mpi,
            build=build,
            env=env,
            extensions=extensions,
            path=path.resolve(),
            extends=chain,
            raw=data,
        )

    def _find_patch(self, rel: str, index: int, recipe_path: Path, where: str) -> Path:
        dirs = (recipe_path.parent.parent / "patches", *self.patches_dirs)
        for directory in dirs:
            candidate = directory / rel
            if candidate.is_file():
                return candidate.resolve()
        raise RecipeError(
            f"{where}: build.patches[{index}]: {rel!r} not found under "
            f"{', '.join(display_path(d) for d in dict.fromkeys(dirs))}"
        )


def _pin(table: dict[str, Any], default_repo: str) -> SourcePin:
    return SourcePin(tag=table.get("tag", ""), repo=table.get("repo", default_repo), commit=table.get("commit"))
