"""``--system-alternatives``: select gcc in an existing alternatives database and restore it after.

A private database stands in for the system's (``/etc/alternatives``, ``/var/lib/dpkg/alternatives``):
the same update-alternatives commands run against it, so the restore logic is tested for real
without touching the machine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from srcbuild.execute.compiler import SystemSelection, parse_query
from srcbuild.plan.compiler import selection_commands
from srcbuild.resolve.compiler import AlternativesTree

pytestmark = pytest.mark.integration


def _tree(tmp_path: Path) -> AlternativesTree:
    for d in ("bin", "alt", "admin"):
        (tmp_path / d).mkdir()
    return AlternativesTree(tmp_path / "bin", tmp_path / "alt", tmp_path / "admin", tmp_path / "ua.log")


def _ua(tree: AlternativesTree, *args: str) -> str:
    return subprocess.run(tree.argv(*args), check=True, stdout=subprocess.PIPE, text=True).stdout


def _select(tree: AlternativesTree, major: str) -> None:
    for cmd in selection_commands(tree, Path(f"/usr/bin/gcc-{major}"), Path(f"/usr/bin/g++-{major}"), major):
        subprocess.run(cmd.argv, check=True)


def test_manual_selection_is_restored(tmp_path: Path, gcc11: Path) -> None:
    tree = _tree(tmp_path)
    _ua(tree, *tree.install_argv(Path("/usr/bin/gcc-12"), Path("/usr/bin/g++-12"))[len(tree.argv()) :])
    _ua(tree, "--set", "gcc", "/usr/bin/gcc-12")
    selection = SystemSelection(tree)
    before = selection.record()
    assert (before.status, before.value) == ("manual", "/usr/bin/gcc-12")
    _select(tree, "11")
    assert (tree.links_dir / "g++").resolve() == Path("/usr/bin/g++-11").resolve()
    selection.restore(Path("/usr/bin/gcc-11"))
    after = parse_query(_ua(tree, "--query", "gcc"))
    assert (after.status, after.value) == ("manual", "/usr/bin/gcc-12")
    assert (tree.links_dir / "g++").resolve() == Path("/usr/bin/g++-12").resolve()


def test_auto_mode_is_restored(tmp_path: Path, gcc11: Path) -> None:
    tree = _tree(tmp_path)
    _ua(tree, *tree.install_argv(Path("/usr/bin/gcc-12"), Path("/usr/bin/g++-12"))[len(tree.argv()) :])
    selection = SystemSelection(tree)
    assert selection.record().status == "auto"
    _select(tree, "11")
    assert parse_query(_ua(tree, "--query", "gcc")).status == "manual"
    selection.restore(Path("/usr/bin/gcc-11"))
    after = parse_query(_ua(tree, "--query", "gcc"))
    assert (after.status, after.value) == ("auto", "/usr/bin/gcc-12")


def test_plain_link_is_put_back_when_there_was_no_alternative(tmp_path: Path, gcc11: Path) -> None:
    tree = _tree(tmp_path)
    (tree.links_dir / "gcc").symlink_to("/usr/bin/gcc-12")  # a distribution's plain gcc link
    selection = SystemSelection(tree)
    before = selection.record()
    assert before.value is None and before.link_target == str(Path("/usr/bin/gcc-12").resolve())
    (tree.links_dir / "gcc").unlink()  # update-alternatives --install replaces it
    _select(tree, "11")
    selection.restore(Path("/usr/bin/gcc-11"))
    assert subprocess.run(tree.argv("--query", "gcc"), stdout=subprocess.DEVNULL).returncode != 0
    assert (tree.links_dir / "gcc").resolve() == Path("/usr/bin/gcc-12").resolve()
