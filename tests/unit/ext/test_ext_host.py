"""An extension resolves as an extension: its Python from the torch, no cuDNN or MPI, its own disk need."""

from __future__ import annotations

import sys
from pathlib import Path

from srcbuild.ext.host import (
    GIB,
    MIB,
    disk_findings,
    disk_need,
    for_extension,
    pick_python,
    python_finding,
    wheel_python,
    without_torch_disk,
)
from srcbuild.findings import Finding, Severity
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve.provisioning import EXT_EXCLUDED

OWN = f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_the_python_of_a_wheel_is_its_cp_tag() -> None:
    assert wheel_python(Path("torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl")) == "3.11"
    assert wheel_python(Path("torch-1.7.1-cp38-cp38-linux_x86_64.whl")) == "3.8"
    assert wheel_python(Path("six-1.16.0-py2.py3-none-any.whl")) is None


def test_the_recipe_pin_is_advice_the_torch_decides() -> None:
    # the pin when the machine has it and torch has a wheel for it
    assert pick_python("3.10", {"3.8", "3.10", "3.11"}, {"3.10", "3.11"}) == "3.10"
    # the pin missing here: srcbuild's own Python, when torch has a wheel for it
    assert pick_python("3.10", {"3.8", "3.10", OWN}, {OWN}) == OWN
    # else the newest this machine has that torch has a wheel for
    assert pick_python("3.10", {"3.8", "3.9"}, {"3.8", "3.9", "3.12"}) == "3.9"
    assert pick_python("3.10", {"3.8"}, {"3.12"}) is None


def test_an_extension_view_has_no_cudnn_no_mpi_and_the_torchs_python(tmp_path: Path) -> None:
    paths = Paths.resolve(work_dir=tmp_path, cache_dir=tmp_path / "c", environ={})
    recipe = RecipeCatalog(paths).load("kepler-k80-cu118-mpi")
    assert recipe.toolchain.cudnn and recipe.mpi.enabled
    view = for_extension(recipe, "3.11")
    assert view.toolchain.python == "3.11" and view.toolchain.cudnn is None and not view.mpi.enabled
    assert view.toolchain.cuda == recipe.toolchain.cuda and view.gpu == recipe.gpu
    (f,) = python_finding(recipe, "3.11", "the Python of torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl")
    assert f.severity is Severity.INFO and f.message == (
        f"recipe {recipe.name} pins Python {recipe.toolchain.python}; the extension is built with Python 3.11, "
        "the Python of torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl: an extension must match the Python of the "
        "torch it builds against, so the recipe's pin is advice here"
    )
    assert python_finding(recipe, recipe.toolchain.python, "x") == ()
    assert set(EXT_EXCLUDED) == {"magma", "cudnn", "nccl", "mpi"}


def test_an_extension_needs_its_own_disk_not_a_torch_builds(tmp_path: Path) -> None:
    need = disk_need(1 * MIB, 2, 592 * MIB)
    assert need == 256 * MIB + 84 * MIB + 3 * 592 * MIB  # about 2 GiB, not a torch build's 5 to 20 GiB
    assert disk_findings(need, 10 * GIB, tmp_path) == ()
    (f,) = disk_findings(need, GIB, tmp_path)
    assert f.rule == "ext-disk" and f.severity is Severity.ERROR
    assert f.message == f"only 1.0 GiB free in the work directory {tmp_path}; this extension build needs about 2.1 GiB"
    torch_disk = Finding("host-disk", Severity.WARNING, "only 12 GiB free; a build needs about 20 GiB")
    other = Finding("host-jobs", Severity.INFO, "MAX_JOBS=2")
    assert without_torch_disk([torch_disk, other]) == (other,)


def test_a_cpu_build_takes_the_newest_gcc_here_when_the_pin_is_missing(tmp_path: Path) -> None:
    from srcbuild.ext.host import cpu_gcc

    for name in ("gcc-10", "gcc-12", "gcc-11", "gcc-ar-12"):
        (tmp_path / name).write_text("")
    assert cpu_gcc("13", str(tmp_path)) == "12"
    assert cpu_gcc("11", str(tmp_path)) == "11"
    assert cpu_gcc("13", str(tmp_path / "none")) == "13"  # nothing here: the pin, provisioned as any build's
