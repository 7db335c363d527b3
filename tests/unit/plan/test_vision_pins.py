"""torchvision's knowledge in a build: torch's rows judged by torch's release, torchvision's build-time
floors in the recipe's build environment (only where torch's rows do not already imply them)."""

from __future__ import annotations

import dataclasses

import pytest
from packaging.specifiers import Specifier

from srcbuild.envs.spec import _implies, env_spec_for
from srcbuild.knowledge import Breakage, load_knowledge
from srcbuild.paths import Paths
from srcbuild.plan.render import render
from srcbuild.recipe import Recipe
from srcbuild.resolve import BuildHost, BuildOptions, resolve
from tests.unit.plan.conftest import load, plan_for


def _vision(options: BuildOptions) -> BuildOptions:
    return dataclasses.replace(options, package="torchvision")


def _retagged(recipe: Recipe, torch: str, vision: str) -> Recipe:
    pinned = recipe.pin_of("torchvision")
    assert pinned is not None
    return dataclasses.replace(
        recipe,
        torch=dataclasses.replace(recipe.torch, tag=torch, commit=None),
        pins=(("torchvision", dataclasses.replace(pinned, tag=vision, commit=None)),),
    )


def test_torch_rows_in_a_torchvision_build_follow_torchs_release(
    paths: Paths, host: BuildHost, options: BuildOptions
) -> None:
    """CMAKE_POLICY_VERSION_MINIMUM is for torch < 2.8: torchvision 0.29.2 (< 2.8 as a number) built
    against torch 2.15.0 does not get it; against torch 2.5.1 it does, as torch's own build."""
    new = plan_for(load(paths, "maxwell-cu126"), _vision(options), host, paths, {})
    assert "CMAKE_POLICY_VERSION_MINIMUM" not in new.env.final_values()
    old = plan_for(load(paths, "kepler-k80-cu118"), _vision(options), host, paths, {})
    assert old.env.final_values()["CMAKE_POLICY_VERSION_MINIMUM"] == "3.5"


def test_a_torch_rule_is_never_judged_by_torchvisions_version(
    paths: Paths, host: BuildHost, options: BuildOptions
) -> None:
    """A handled torch row for torch < 1 holds torchvision 0.8.2's number but not torch 1.7.1's:
    kepler-cu92's torchvision build leaves it out; one for torch 1.7.x reaches both builds."""
    kb = load_knowledge()
    recipe = load(paths, "kepler-cu92")

    def row(torch: str, value: str) -> Breakage:
        return Breakage(f"t-{value}", torch, "t", "s", "f", "env", value, "test", handled=True)

    rows = (*kb.breakages, row("<1", "BELOW_ONE=1"), row("==1.7.*", "SEVENTEEN=1"))
    knowledge = dataclasses.replace(kb, breakages=rows)
    for package in ("torch", "torchvision"):
        built = resolve(recipe, _vision(options) if package == "torchvision" else options, host, knowledge,
                        paths=paths, environ={})  # fmt: skip
        variables = built.env_changes.final_values()
        assert "BELOW_ONE" not in variables and variables["SEVENTEEN"] == "1", package


@pytest.mark.parametrize(
    ("held", "wanted", "implied"),
    [
        ("<=59.5.0", "<77", True),
        ("<80", "<77", False),
        ("<77", "<80", True),
        ("<2", "<2", True),
        ("<=2", "<2", False),
        ("<2", "<=2", True),
        (">=3.18", ">=3.5", True),
        (">=3.5", ">=3.18", False),
        ("<4", ">=3.5", False),
        ("!=8.3.*", "!=8.3.*", True),
        ("<10", "!=8.3.*", False),
    ],
)
def test_implies(held: str, wanted: str, implied: bool) -> None:
    assert _implies(Specifier(held), Specifier(wanted)) is implied


def _without_vision(recipe: Recipe) -> Recipe:
    return dataclasses.replace(recipe, pins=tuple((t, p) for t, p in recipe.pins if t != "torchvision"))


def test_floors_torch_already_implies_leave_the_environment_as_it_was(paths: Paths) -> None:
    """kepler-cu92 (torch 1.7.1: setuptools<=59.5.0, numpy<2) already has what torchvision 0.8.2
    needs (setuptools<77, numpy<2): the same spec and hash as without torchvision, no duplicate."""
    for name in ("kepler-cu92", "kepler-cu102", "pascal-mx150-cu113", "kepler-k80-torch28", "maxwell-cu126"):
        recipe = load(paths, name)
        assert env_spec_for(recipe, environ={}).hash() == env_spec_for(_without_vision(recipe), environ={}).hash()


def test_a_floor_torch_leaves_open_narrows_the_environment(paths: Paths) -> None:
    """kepler-k80-cu118: torch 2.5.1 allows setuptools<80, torchvision 0.20.1 needs <77 (py_torchvision)."""
    recipe = load(paths, "kepler-k80-cu118")
    spec = env_spec_for(recipe, environ={})
    assert "setuptools <77" in spec.conda and not [s for s in spec.conda if s.startswith("setuptools <80")]
    assert spec.origin("setuptools").endswith("; torchvision 0.20.1 build pin")
    assert "setuptools<77" in spec.as_pip_only().pip  # a venv gets it too
    assert "setuptools <80" in env_spec_for(_without_vision(recipe), environ={}).conda
    assert not [s for s in (*spec.conda, *spec.pip) if s.lower().startswith("pillow")]  # run-time only


def test_numpy_2_is_kept_out_where_only_torchvision_needs_it(paths: Paths) -> None:
    """torch 2.3.1 has no numpy pin (its rows stop at < 2.3); torchvision 0.18.1 needs numpy<2."""
    recipe = _retagged(load(paths, "kepler-k80-cu118"), "v2.3.1", "v0.18.1")
    spec = env_spec_for(recipe, environ={})
    assert "numpy <2" in spec.conda
    assert "numpy" in env_spec_for(_without_vision(recipe), environ={}).conda


def test_a_recipe_pip_pin_is_narrowed_in_place(paths: Paths) -> None:
    """A package the environment takes from pip (the recipe's [env] pip) is narrowed the same way."""
    from srcbuild.envs.spec import _Builder, load_build_deps

    builder = _Builder(load_build_deps())
    builder.add_pin("Pillow[tk]>=5,<11", "recipe", "3.10")
    builder.add_narrowing_pin("pillow<10", "torchvision pin", "3.10")
    assert builder.pip == {"pillow": "Pillow[tk]<10,>=5"}  # <11 is implied by <10
    builder.add_narrowing_pin("pillow<12", "looser", "3.10")
    assert builder.pip == {"pillow": "Pillow[tk]<10,>=5"}
    assert builder.origins["pillow"] == "recipe; torchvision pin"


def test_a_conda_only_form_stays_beside_a_narrowing_pin() -> None:
    """``gcc 7.*,<8`` narrowed by ``gcc<7.5``: the conda-only ``7.*`` stays, ``<8`` goes."""
    from srcbuild.envs.spec import _Builder, load_build_deps

    builder = _Builder(load_build_deps())
    builder.add_conda("gcc 7.*", "recipe", None)
    builder.add_pin("gcc<8", "floor", "3.10")
    builder.add_narrowing_pin("gcc<7.5", "narrower", "3.10")
    assert builder.conda_specs() == ("gcc 7.*,<7.5",)


def test_the_plan_shows_the_environment_torchvision_builds_in(paths: Paths, host: BuildHost) -> None:
    """`srcbuild plan torchvision --recipe kepler-k80-cu118`: the environment step names both
    releases and lists setuptools <77, in lines of at most 80 columns."""
    options = BuildOptions(package="torchvision")
    plan = plan_for(load(paths, "kepler-k80-cu118"), options, dataclasses.replace(host, rattler=True), paths, {})
    step = plan.step("environment")
    assert step.why.startswith(
        "a Python 3.10 with the build dependencies of v2.5.1, torchvision v0.20.1 and torchaudio v2.5.1 ("
    )
    assert "setuptools <77" in step.why and "setuptools <80" not in step.why
    text = render(plan, "text")
    assert "'setuptools <77'" in text
    start = text.index("[environment]")
    block = text[start : text.index("srcbuild: rattler", start)]  # the title and the why
    assert "setuptools <77" in block and all(len(line) <= 80 for line in block.splitlines()), block
