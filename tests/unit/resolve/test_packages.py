"""The package registry: every entry has its build variables, and patches go to the right tree."""

from __future__ import annotations

import pytest

from srcbuild.errors import UsageError
from srcbuild.recipe.packages import PACKAGES, package_spec
from srcbuild.resolve.packages import package_variables
from srcbuild.resolve.variables import VARIABLES, torch_variables, vision_variables


def test_every_registered_package_has_its_build_variables() -> None:
    assert set(VARIABLES) == set(PACKAGES)
    assert package_variables(package_spec("torch")) is torch_variables
    assert package_variables(package_spec("torchvision")) is vision_variables


def test_an_unknown_package_lists_the_valid_names() -> None:
    with pytest.raises(UsageError, match="unknown package 'tensorflow'") as caught:
        package_spec("tensorflow")
    assert caught.value.hint == "choose one of: torch, torchvision"


def test_a_patch_counts_for_its_own_package_or_for_every_package() -> None:
    torch, vision = package_spec("torch"), package_spec("torchvision")
    assert torch.counts_patch("torch/v1.7.1/0001-x.patch")
    assert not vision.counts_patch("torch/v1.7.1/0001-x.patch")
    assert vision.counts_patch("torchvision/0001-y.patch") and not torch.counts_patch("torchvision/0001-y.patch")
    assert torch.counts_patch("common.patch") and vision.counts_patch("shared/z.patch")
