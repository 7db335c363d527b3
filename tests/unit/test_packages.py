"""The package registry: variables from each entry, the build order, and patches to the right tree."""

from __future__ import annotations

import pytest

from srcbuild.errors import UsageError
from srcbuild.packages import PACKAGES, build_order, package_spec
from srcbuild.resolve.variables import torch_variables, variables_of


def test_torch_has_its_own_variables_and_the_others_are_made_from_their_entry() -> None:
    assert variables_of(package_spec("torch")) is torch_variables
    for spec in PACKAGES.values():
        if spec.needs_torch_wheel:
            assert variables_of(spec).args == (spec,)  # type: ignore[attr-defined]


def test_a_package_is_built_after_the_packages_it_is_built_against() -> None:
    assert build_order("torch") == ("torch",)
    assert build_order("torchvision") == ("torch", "torchvision")
    assert build_order("torchaudio") == ("torch", "torchaudio")


def test_an_unknown_package_lists_the_valid_names() -> None:
    with pytest.raises(UsageError, match="unknown package 'tensorflow'") as caught:
        package_spec("tensorflow")
    assert caught.value.hint == "choose one of: torch, torchvision, torchaudio"


def test_a_patch_counts_for_its_own_package_or_for_every_package() -> None:
    torch, vision, audio = package_spec("torch"), package_spec("torchvision"), package_spec("torchaudio")
    assert torch.counts_patch("torch/v1.7.1/0001-x.patch")
    assert not vision.counts_patch("torch/v1.7.1/0001-x.patch")
    assert vision.counts_patch("torchvision/0001-y.patch") and not torch.counts_patch("torchvision/0001-y.patch")
    assert audio.counts_patch("torchaudio/0001-z.patch") and not vision.counts_patch("torchaudio/0001-z.patch")
    assert torch.counts_patch("common.patch") and vision.counts_patch("shared/z.patch")
