"""EnvSpec from catalog recipes: era dependencies, magma, pins folded in, recipe [env], hash."""

from __future__ import annotations

import dataclasses
import os

import pytest

from srcbuild.envs import env_spec_for
from srcbuild.envs.spec import EnvSpec, load_build_deps, torch_version_of
from srcbuild.errors import RecipeError
from srcbuild.knowledge import BuildPins
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.recipe.model import EnvTable


class PinsKB:
    """The knowledge base's build-pins answers for old tags (torch's, torchvision's), fixed for these tests."""

    def __init__(
        self,
        pins: tuple[str, ...] = ("setuptools<=59.5.0", "numpy<2", "cmake<4"),
        vision: tuple[str, ...] = ("setuptools<77", "numpy<2"),
    ) -> None:
        self.pins = pins
        self.vision = vision

    def build_pins(self, torch_version: str) -> tuple[str, ...]:
        return self.pins

    def package_build_pins(self, project: str, version: str) -> BuildPins:
        return BuildPins(pip=self.vision if project == "torchvision" else (), env=(), reasons=())


@pytest.fixture
def catalog() -> RecipeCatalog:
    return RecipeCatalog(Paths.resolve(environ=os.environ))


def test_kepler_cu92_spec(catalog: RecipeCatalog) -> None:
    spec = env_spec_for(catalog.load("kepler-cu92"), kb=PinsKB(), environ={})
    assert spec.python == "3.8"
    assert spec.conda_specs == (
        "python 3.8.*",
        "numpy <2",
        "pyyaml",
        "mkl",
        "mkl-include",
        "setuptools <=59.5.0",
        "cmake <4",
        "cffi",
        "typing_extensions",
        "ninja",
    )  # no magma-cuda92: MAGMA is a toolchain piece (srcbuild toolchain), so a venv can build CUDA too
    assert spec.channels == ("conda-forge",)
    assert spec.pip == ()
    assert spec.conda_only == ()
    assert spec.origin("numpy <2") == "torch 1.7.1 build dependency; build pin (knowledge base)"


def test_pip_equivalents_make_a_venv_spec(catalog: RecipeCatalog) -> None:
    recipe = dataclasses.replace(
        catalog.load("kepler-cu92"),
        toolchain=dataclasses.replace(catalog.load("kepler-cu92").toolchain, cuda=None, cudnn=None),
    )
    spec = env_spec_for(recipe, kb=PinsKB(), environ={})
    assert spec.conda_only == ()
    venv = spec.as_pip_only()
    assert venv.conda == () and venv.channels == ()
    assert venv.pip == (
        "numpy<2",
        "PyYAML",
        "mkl",
        "mkl-include",
        "setuptools<=59.5.0",
        "cmake<4",
        "cffi",
        "typing-extensions",
        "ninja",
    )


def test_cuda_without_magma_package_has_no_magma(catalog: RecipeCatalog) -> None:
    spec = env_spec_for(catalog.load("pascal-cu126"), kb=PinsKB(()), environ={})
    assert not any(s.startswith("magma") for s in spec.conda)
    assert spec.channels == ("conda-forge",)
    assert "sympy" in spec.conda  # the 2.x era list


def test_recipe_env_table_adds_conda_pip_and_channels(catalog: RecipeCatalog) -> None:
    base = catalog.load("kepler-cu102")
    recipe = dataclasses.replace(
        base, env=EnvTable(conda=("gxx_linux-64 7.*", "numpy 1.19.*"), channels=("my-channel",), pip=("pybind11==2.6",))
    )
    spec = env_spec_for(recipe, kb=PinsKB(), environ={})
    assert "gxx_linux-64 7.*" in spec.conda
    assert "numpy 1.19.*,<2" in spec.conda  # the recipe's constraint and the pin, on one package
    assert spec.pip == ("pybind11==2.6",)
    assert spec.channels == ("my-channel", "conda-forge")
    assert spec.wants_conda_compiler
    assert spec.conda_only == ("gxx_linux-64 7.*",)
    assert dict(spec.pip_equivalents)["numpy 1.19.*,<2"] == "numpy==1.19.*,<2"


def test_pins_for_packages_outside_the_list_go_to_pip(catalog: RecipeCatalog) -> None:
    spec = env_spec_for(catalog.load("kepler-cu92"), kb=PinsKB(("protobuf<4",)), environ={})
    assert spec.pip == ("protobuf<4",)


def test_hash_is_stable_and_follows_content(catalog: RecipeCatalog) -> None:
    recipe = catalog.load("kepler-cu92")
    one = env_spec_for(recipe, kb=PinsKB(), environ={})
    two = env_spec_for(
        recipe, kb=PinsKB(), channel_mirrors=["conda-forge=https://mirror.example.edu/conda-forge"], environ={}
    )
    assert one.hash() == two.hash()  # routing is not identity
    assert len(one.hash()) == 64 and one.key == one.hash()[:16]
    changed = env_spec_for(recipe, kb=PinsKB(("numpy<1.20",)), environ={})
    assert changed.hash() != one.hash()
    reordered = dataclasses.replace(one, conda=tuple(reversed(one.conda)))
    assert reordered.hash() == one.hash()  # package order does not matter
    assert dataclasses.replace(one, channels=("pytorch", "conda-forge")).hash() != one.hash()  # priority does


def test_channels_override_replaces_the_list(catalog: RecipeCatalog) -> None:
    spec = env_spec_for(catalog.load("kepler-cu92"), kb=PinsKB(), channels_override=["file:///srv/chan"], environ={})
    assert spec.channels == ("file:///srv/chan",)


def test_every_catalog_recipe_has_a_spec(catalog: RecipeCatalog) -> None:
    for recipe in catalog.load_all():
        spec = env_spec_for(recipe, kb=PinsKB((), ()), environ={})
        assert spec.conda_specs[0] == f"python {recipe.toolchain.python}.*"
        assert "numpy" in spec.conda and "cmake" in spec.conda


def test_real_knowledge_base_pins_old_tags(catalog: RecipeCatalog) -> None:
    pytest.importorskip("srcbuild.knowledge")
    spec = env_spec_for(catalog.load("kepler-cu92"), environ={})
    assert "setuptools <=59.5.0" in spec.conda
    assert "numpy <2" in spec.conda


def test_torch_version_of() -> None:
    assert torch_version_of("v1.7.1") == "1.7.1"
    with pytest.raises(RecipeError) as err:
        torch_version_of("main")
    assert err.value.message == "torch tag 'main' is not a version, so its build dependencies are unknown"


def test_build_deps_data_has_sources() -> None:
    deps = load_build_deps()
    assert deps.era_for("1.7.1")[0][0] == "numpy"
    assert all(source for _, _, source in deps.eras)


def test_to_json_round_trips_the_identity() -> None:
    spec = EnvSpec(python="3.8", conda=("libgreet >=1",), channels=("file:///c",))
    data = spec.to_json()
    assert data["hash"] == spec.hash()
    assert data["conda"] == ["libgreet >=1"]
    assert data["routing"] == {"alias": None, "mirrors": {}}


def test_lock_virtual_packages_are_portable_and_cuda_follows_the_recipe() -> None:
    from srcbuild.envs.solve import virtual_package_specs

    spec = EnvSpec(python="3.8", cuda="9.2")
    assert virtual_package_specs(spec, for_this_host=False) == [
        ("__unix", "0", "0"),
        ("__linux", "5.10", "0"),
        ("__glibc", "2.28", "0"),
        ("__archspec", "1", "x86_64"),
        ("__cuda", "9.2", "0"),
    ]
    assert ("__cuda", "9.2", "0") not in virtual_package_specs(EnvSpec(python="3.8"), for_this_host=False)


def test_pip_packages_bring_pip_into_the_conda_env() -> None:
    assert EnvSpec(python="3.8", conda=("cmake",)).conda_specs == ("python 3.8.*", "cmake")
    assert EnvSpec(python="3.8", pip=("pybind11",)).conda_specs == ("python 3.8.*", "pip")
    assert EnvSpec(python="3.8", conda=("pip 21.*",), pip=("x",)).conda_specs == ("python 3.8.*", "pip 21.*")


def test_pins_with_markers_follow_the_recipe_python(catalog: RecipeCatalog) -> None:
    pins = PinsKB(('dataclasses; python_version < "3.7"', 'protobuf<4; python_version >= "3.8"'))
    spec = env_spec_for(catalog.load("kepler-cu92"), kb=pins, environ={})  # Python 3.8
    assert spec.pip == ("protobuf<4",)


def test_another_machines_glibc_replaces_the_portable_default() -> None:
    from srcbuild.envs.solve import virtual_package_specs

    virtual = virtual_package_specs(EnvSpec(python="3.8"), for_this_host=False, glibc="2.17")
    assert ("__glibc", "2.17", "0") in virtual
    assert not [v for v in virtual if v[0] == "__glibc" and v[1] != "2.17"]
