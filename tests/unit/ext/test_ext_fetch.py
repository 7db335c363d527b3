"""``--torch VERSION``: the wheel chosen from the index's listing as pip would choose it, with no
download; the fetch-torch step that says what is fetched from where into where."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.errors import NotFoundError
from srcbuild.ext.actions import FetchTorchWheel
from srcbuild.ext.fetch import pick_torch_wheel

# this machine's kind of platform list, most preferred first (packaging.tags.platform_tags on glibc 2.36)
PLATFORMS = ["manylinux_2_36_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux_2_5_x86_64", "manylinux1_x86_64", "linux_x86_64"]
INDEX = "https://index.example.org/simple/torch/"
INTO = Path("/w/torch-wheels")


def listing(*names: str) -> list[tuple[str, str]]:
    return [(name, f"{INDEX}{name}#sha256={i:064x}") for i, name in enumerate(names)]


def test_the_most_preferred_platform_of_the_pinned_python_is_taken_with_its_sha256() -> None:
    files = listing(
        "torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl",
        "torch-2.0.1-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "torch-2.0.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "torch-2.0.1-cp311-cp311-macosx_11_0_arm64.whl",
        "torch-2.0.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torchvision-2.0.1-cp311-cp311-manylinux_2_28_x86_64.whl",
    )
    chosen = pick_torch_wheel("2.0.1", "3.11", files, {"3.10", "3.11"}, PLATFORMS, INTO)
    name = "torch-2.0.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    assert chosen == FetchTorchWheel("2.0.1", "3.11", name, INDEX + name, f"{2:064x}", INTO)
    assert chosen.wheel == INTO / name


def test_a_version_without_a_label_takes_the_highest_label_as_pip_does() -> None:
    files = listing("torch-2.0.1+cpu-cp311-cp311-linux_x86_64.whl", "torch-2.0.1+cu117-cp311-cp311-linux_x86_64.whl")
    assert pick_torch_wheel("2.0.1", "3.11", files, {"3.11"}, PLATFORMS, INTO).filename == (
        "torch-2.0.1+cu117-cp311-cp311-linux_x86_64.whl"
    )
    assert pick_torch_wheel("2.0.1+cpu", "3.11", files, {"3.11"}, PLATFORMS, INTO).filename == (
        "torch-2.0.1+cpu-cp311-cp311-linux_x86_64.whl"
    )


def test_a_file_without_a_stated_sha256_is_planned_unchecked() -> None:
    name = "torch-2.5.1-cp311-cp311-linux_x86_64.whl"
    chosen = pick_torch_wheel("2.5.1", "3.11", [(name, f"file:///srv/wheels/{name}")], {"3.11"}, PLATFORMS, INTO)
    assert (chosen.url, chosen.sha256) == (f"file:///srv/wheels/{name}", "")
    assert chosen.describe().startswith(f"download file:///srv/wheels/{name} into {INTO} with pip (the index states "
                                        "no sha256 to check;")
    assert chosen.shell() == (
        f"PIP_CONSTRAINT=/dev/null python3 -m pip download --no-deps --only-binary=:all: -d {INTO} "
        f"--python-version 3.11 --implementation cp --abi cp311 file:///srv/wheels/{name}",
    )


def test_no_wheel_for_a_python_here_is_refused_with_what_to_do() -> None:
    files = listing("torch-2.0.1-cp38-cp38-manylinux1_x86_64.whl")
    with pytest.raises(NotFoundError) as caught:
        pick_torch_wheel("2.0.1", "3.11", files, {"3.11"}, PLATFORMS, INTO)
    assert caught.value.message == (
        "--torch 2.0.1: the package index lists torch 2.0.1 for Python 3.8 and this machine has Python 3.11"
    )
    assert caught.value.hint.startswith("make one of those Pythons (srcbuild env runtime 3.8 DIR)")
    with pytest.raises(NotFoundError, match=r"the package index lists no torch 9\.9 wheel for this platform"):
        pick_torch_wheel("9.9", "3.11", files, {"3.11"}, PLATFORMS, INTO)
