"""``srcbuild recipes list|show|check``: the catalog and the validity of recipe files."""

from __future__ import annotations

import re
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import click

from srcbuild.capability import generation
from srcbuild.cli.common import command_environ, complete_recipe, json_option, print_json, resolve_paths
from srcbuild.console import SETTINGS, Verbosity, echo_text, make_console, output_width, print_table
from srcbuild.errors import IncompatibleError, RecipeError, UsageError
from srcbuild.files import write_atomic
from srcbuild.findings import Severity
from srcbuild.packages import PACKAGES
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.recipe.catalog import recipe_reference
from srcbuild.recipe.load import display_path

_GPU_NAMES = re.compile(r"^(?P<names>.*?) \((?:[^()]*)compute capability[^()]*\)")


def gpu_names(recipe: Recipe) -> str:
    """The GPU names a recipe's description gives before its "(…, compute capability …)" part."""
    m = _GPU_NAMES.match(recipe.description or "")
    return m.group("names").strip() if m else ""


def gpus_label(recipe: Recipe) -> str:
    if not recipe.gpu.arch:
        return "CPU only"
    archs = " ".join(str(cc) for cc in recipe.gpu.arch)
    names = gpu_names(recipe)
    if names:
        return f"{archs}: {names}"
    gens = dict.fromkeys(generation(cc) for cc in recipe.gpu.arch)
    return f"{archs} ({'/'.join(gens)})"


def summary_row(recipe: Recipe) -> dict[str, object]:
    return {
        "name": recipe.name,
        "ok": True,
        "gpus": gpus_label(recipe),
        "torch": recipe.torch.tag,
        **{
            spec.name: pin.tag if (pin := recipe.pin_of(spec.recipe_table)) else None
            for spec in PACKAGES.values()
            if spec.needs_torch_wheel
        },
        "cuda": recipe.toolchain.cuda or "none",
        "cudnn": recipe.toolchain.cudnn,
        "gcc": recipe.toolchain.gcc,
        "python": recipe.toolchain.python,
        "mpi": f"{recipe.mpi.implementation} {recipe.mpi.version}" if recipe.mpi.enabled else None,
        "description": recipe.description,
        "path": str(recipe.path),
    }


@click.group("recipes")
def recipes_group() -> None:
    """List, show and check recipes."""


@recipes_group.command("list")
@json_option
def list_recipes(as_json: bool) -> int:
    """The catalog as a table: GPUs, torch, torchvision, torchaudio, CUDA, cuDNN, gcc, Python, MPI.

    A recipe file in the search path that does not load is listed apart with its error."""
    recipes, broken = RecipeCatalog(resolve_paths()).scan()
    rows = [summary_row(r) for r in recipes]
    if as_json:
        print_json([*rows, *({"ok": False, **b.to_json()} for b in broken)])
        return 0
    console = make_console()
    print_table(
        "srcbuild recipes",
        ("recipe", "GPUs", "torch", "toolchain", "Python"),
        (
            (
                row["name"],
                row["gpus"],
                "\n".join(
                    f"{_short(name)} {_bare(row[name])}" for name in PACKAGES if row.get(name)
                ),
                f"CUDA {row['cuda']}" + (f"\ncuDNN {row['cudnn']}" if row["cudnn"] else "") + f"\ngcc {row['gcc']}",
                f"{row['python']}" + (f"\n{row['mpi']}" if row["mpi"] else ""),
            )
            for row in rows
        ),
        console,
    )
    for item in broken:
        console.print(f"broken  {item.name}: {item.error.message}", markup=False)
    return 0


def _short(package: str) -> str:
    """``vision`` for torchvision, ``audio`` for torchaudio, ``torch`` for torch: the catalog table's label."""
    return package.removeprefix("torch") or package


def _bare(tag: object) -> str:
    text = str(tag)
    return text[1:] if text[:1] == "v" and text[1:2].isdigit() else text


@recipes_group.command("show")
@click.argument("recipe")
@json_option
def show_recipe(recipe: str, as_json: bool) -> int:
    """The resolved recipe RECIPE (a name or a file), after `extends` is merged."""
    loaded = RecipeCatalog(resolve_paths()).load(recipe)
    data = loaded.to_json()
    if as_json:
        print_json(data)
        return 0
    width = output_width(sys.stdout, command_environ())
    comments = [f"{loaded.name}: {loaded.description}", f"from {display_path(loaded.path or Path(recipe))}"]
    if loaded.extends:
        comments.append(f"extends {' -> '.join(loaded.extends)}")
    comments.append(f"local version: +{loaded.local_version()}")
    out = [piece for text in comments for piece in textwrap.wrap(text, width - 2, break_on_hyphens=False)]
    out = [f"# {line}" for line in out]
    for table in (*(spec.recipe_table for spec in PACKAGES.values()), "toolchain", "gpu", "mpi", "build", "env"):
        value = data[table]
        if not value or not any(v not in (None, [], {}) for v in value.values()):
            continue
        shown = {key: item for key, item in value.items() if item is not None and item != [] and item != {}}
        out.append(f"\n[{table}]")
        # a table value too wide for one line becomes a [table.key] section after the other keys
        wide = {k: v for k, v in shown.items() if isinstance(v, dict) and len(f"{k} = {_toml_value(v)}") > width}
        out.extend(f"{key} = {_toml_value(item)}" for key, item in shown.items() if key not in wide)
        for key, item in wide.items():
            assert isinstance(item, dict)
            out.append(f"\n[{table}.{key}]")
            out.extend(f"{k} = {_toml_value(v)}" for k, v in item.items())
    click.echo("\n".join(out))
    return 0


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)


@recipes_group.command("check")
@click.argument("recipes", nargs=-1)
@json_option
def check_recipes(recipes: tuple[str, ...], as_json: bool) -> int:
    """Validate RECIPES (names or files; all catalog recipes when none are given).

    Exits 2 when a recipe cannot be read or is invalid, else 3 when one breaks a compatibility rule."""
    from srcbuild.rules import check_recipe  # the knowledge tables, only for a check

    catalog = RecipeCatalog(resolve_paths())
    targets = list(recipes) or list(catalog.names())
    results: list[dict[str, Any]] = []
    code = 0
    known = catalog.load_all()  # a broken file fails only its own line below
    rendered: dict[str, list[str]] = {}
    for target in targets:
        try:
            recipe = catalog.load(target)
        except RecipeError as exc:
            code = RecipeError.exit_code
            results.append({"recipe": target, "ok": False, "error": exc.message, "findings": []})
            continue
        # Compatibility rules (srcbuild.rules): every finding at once; any error fails the recipe.
        findings = check_recipe(recipe, catalog=known)
        errors = sum(f.severity is Severity.ERROR for f in findings)
        if errors and not code:
            code = IncompatibleError.exit_code
        error = f"{recipe.name}: {errors} compatibility error{'s' if errors > 1 else ''}" if errors else None
        results.append(
            {"recipe": recipe.name, "ok": not errors, "error": error, "findings": [f.to_json() for f in findings]}
        )
        notes = sum(f.severity is Severity.INFO for f in findings)
        verbose = SETTINGS.verbosity is Verbosity.VERBOSE
        rendered[recipe.name] = [f.render() for f in findings if verbose or f.severity is not Severity.INFO]
        if notes and not verbose:
            shown = recipe_reference(recipe)
            rendered[recipe.name].append(
                f"{notes} note{'s' if notes > 1 else ''} on what srcbuild handles; to read them: "
                f"srcbuild -v recipes check {shown}"
            )
    if as_json:
        print_json(results)
    else:
        for result in results:
            if result["ok"]:
                click.echo(f"ok     {result['recipe']}")
            else:
                click.echo(f"error  {result['error']}")
            for text in rendered.get(str(result["recipe"]), []):
                echo_text(textwrap.indent(text, "       ") + "\n")
        click.echo(f"{sum(r['ok'] for r in results)} of {len(results)} recipes valid")
    return code


def starter_text(name: str, base: Recipe, base_text: str) -> str:
    """A recipe that extends ``base``: its own name, description and ``extends``, then every line
    of the base file commented out, for reference (uncomment and change only what differs)."""
    head = [
        f"# {name}: {base.name} with changes. Tables merge key by key with {base.name}'s,",
        "# so only what differs goes here: uncomment a line of the reference below and change it.",
        f'name = "{name}"',
        f'description = "{base.description}"',
        f'extends = "{base.name}"',
        "",
        f"# ---- {base.name}, for reference ----",
    ]
    skip = re.compile(r"^\s*(name|description|extends)\s*=")
    body = []
    top = True  # the recipe's own keys come before its first table; a table's name (an extension's) stays
    for line in base_text.splitlines():
        top = top and not line.lstrip().startswith("[")
        if top and skip.match(line):
            continue
        body.append(line if not line.strip() else ("#" + line if line.startswith("#") else "# " + line))
    return "\n".join([*head, *body]) + "\n"


@recipes_group.command("new")
@click.argument("name")
@click.option("--extends", "base_name", required=True, shell_complete=complete_recipe, help="The recipe to start from.")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to write NAME.toml [default: the first SRCBUILD_RECIPES_PATH directory, else the current one].",
)
def new_recipe(name: str, base_name: str, directory: str | None) -> int:
    """Write NAME.toml, a recipe that extends BASE, with BASE's lines and comments for reference."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        raise UsageError(
            f"recipe name {name!r}: use lowercase letters, digits, '.', '_' and '-'", "e.g. kepler-cu92-mine"
        )
    paths = resolve_paths()
    catalog = RecipeCatalog(paths)
    base = catalog.load(base_name)
    extra = [d for d in paths.recipe_dirs[:-1]]
    target_dir = Path(directory) if directory else (extra[0] if extra else Path.cwd())
    target = target_dir / f"{name}.toml"
    if target.exists():
        raise UsageError(f"{display_path(target)} exists already", f"pick another name, or edit it: $EDITOR {target}")
    assert base.path is not None
    target_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(target, starter_text(name, base, base.path.read_text(encoding="utf-8")))
    RecipeCatalog(paths).load(str(target))  # it loads, or the error names the line
    shown = shlex.quote(display_path(target))
    click.echo(f"wrote {display_path(target)}; check it with: srcbuild recipes check {shown}")
    click.echo(f"use it by its path: srcbuild plan torch --recipe {shown}")
    if any(d.resolve() == target_dir.resolve() for d in paths.recipe_dirs):
        click.echo(f"or by its name: srcbuild plan torch --recipe {shlex.quote(name)}")
    else:
        where = shlex.quote(str(target_dir.resolve()))
        click.echo(f"or by its name, with its directory on the recipe path: export SRCBUILD_RECIPES_PATH={where}")

    return 0
