"""Fuzzing the recipe loader: whatever a recipe file holds, the loader returns a Recipe or raises
RecipeError (a one-line message), never anything else, and what it accepts holds no control
character and only ASCII-digit versions.

CI runs a fixed seed and a small budget (a few seconds). A longer run is one command away:

    SRCBUILD_FUZZ_EXAMPLES=20000 python -m pytest -q tests/unit/test_recipe_fuzz.py

(``SRCBUILD_FUZZ_SEED=random`` also draws new inputs each run instead of the fixed ones.)
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from srcbuild.errors import RecipeError
from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeLoader
from srcbuild.recipe.load import tomllib
from srcbuild.recipe.schema import Field, control_character, recipe_schema

EXAMPLES = int(os.environ.get("SRCBUILD_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=os.environ.get("SRCBUILD_FUZZ_SEED", "") != "random",
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

VALID = """name = "fuzz"
description = "a valid recipe to mutate"
[torch]
tag = "v1.7.1"
repo = "https://github.com/pytorch/pytorch"
[toolchain]
python = "3.8"
gcc = "7"
cuda = "9.2"
cudnn = "7.6"
[gpu]
arch = ["3.0", "3.5"]
ptx = true
[mpi]
enabled = true
implementation = "openmpi"
version = "4.0"
[build]
env = { USE_NCCL = "0" }
[env]
conda = ["magma-cuda92"]
"""

# Strings an attacker would try: control characters, shell syntax, other scripts' digits, long ones.
HOSTILE = st.sampled_from(
    [
        "\n", "\x00", "\r", "\u2028", "\x7f", "$(id)", "`id`", "; id", "'", '"', "\\", "../../x", "/etc/passwd",
        "١١", "３.５", "3.8\n", "ext::sh -c id", "fd::0", "x" * 5000, "-rf", "v1.7.1:refs/heads/x", "%s%n", "",
    ]
)  # fmt: skip
TEXT = st.one_of(HOSTILE, st.text(max_size=40), st.builds(lambda a, b: a + b, st.text(max_size=8), HOSTILE))
SCALAR = st.one_of(TEXT, st.integers(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False))
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string (\\uXXXX escapes and all)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


def _document(data: dict[str, Any]) -> str:
    """``data`` as TOML: top-level keys first, then one [table] per dict value."""
    scalars = [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    tables = [
        f"[{json.dumps(k)}]\n" + "\n".join(f"{json.dumps(sk)} = {_toml_value(sv)}" for sk, sv in v.items())
        for k, v in data.items()
        if isinstance(v, dict)
    ]
    return "\n".join(scalars + tables) + "\n"


def _known_keys() -> st.SearchStrategy[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    for key, spec in recipe_schema().items():
        if isinstance(spec, Field):
            pairs.append((key, None))
        else:
            pairs += [(key, sub) for sub in spec]
    return st.sampled_from(pairs)


@st.composite
def recipes_with_one_hostile_value(draw: st.DrawFn) -> str:
    """The valid recipe with one known key (or a new one) set to a drawn value."""
    data = tomllib.loads(VALID)
    new_key = st.tuples(st.sampled_from(["torch", "build"]), TEXT)
    table, key = draw(st.one_of(_known_keys(), st.tuples(TEXT, st.none()), new_key))
    value = draw(VALUE)
    if key is None:
        data[table] = value
    else:
        if not isinstance(data.get(table), dict):
            data[table] = {}
        data[table][key] = value
    return _document(data)


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    """The valid recipe's text with a few characters replaced, inserted or cut."""
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 6))
        text = text[:at] + draw(st.one_of(HOSTILE, st.text(max_size=6))) + text[at + cut :]
    return text


def _load(text: str, stem: str = "fuzz") -> Recipe | None:
    paths = Paths.resolve(environ={})
    loader = RecipeLoader(paths.recipe_dirs, paths.patches_dirs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{stem}.toml"
        try:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        except OSError:  # a file name this file system refuses: nothing to load
            return None
        try:
            recipe = loader.load(path)
        except RecipeError as exc:
            assert "\n" not in exc.message and exc.message
            return None
    _check_accepted(recipe)
    return recipe


def _check_accepted(recipe: Recipe) -> None:
    """What the loader lets through is one-line text with ASCII-digit versions."""
    assert control_character(recipe.raw) is None
    assert control_character(recipe.name) is None
    tool = recipe.toolchain
    for version in (tool.python, tool.gcc, tool.cuda or "", tool.cudnn or "", recipe.mpi.version or ""):
        assert version.isascii()
    assert all(str(cc).isascii() for cc in recipe.gpu.arch)


@FUZZ
@given(recipes_with_one_hostile_value())
def test_generated_documents_only_raise_recipe_error(text: str) -> None:
    _load(text)


@FUZZ
@given(mutated_text())
def test_mutated_recipe_text_only_raises_recipe_error(text: str) -> None:
    _load(text)


@FUZZ
@given(st.text(max_size=300))
def test_any_text_only_raises_recipe_error(text: str) -> None:
    _load(text)


@FUZZ
@given(st.one_of(HOSTILE, st.text(min_size=1, max_size=30)))
def test_hostile_file_names_only_raise_recipe_error(stem: str) -> None:
    if "/" in stem or "\x00" in stem or stem in (".", ".."):
        return  # not a file name at all
    _load(VALID.replace('name = "fuzz"\n', ""), stem)


def test_the_valid_recipe_loads() -> None:
    assert _load(VALID) is not None
