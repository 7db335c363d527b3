"""A checkout is clean only when its bytes are the pinned tree's: git's index flags, local commits,
``git replace``, local excludes, and clean/smudge filters, textconv, ident or eol rules set in
``.git/info/attributes``, ``core.attributesFile`` or a gitattributes file in the working tree
cannot make an edited checkout look clean; what the pinned tree's own ``.gitattributes`` converts
on checkout (``*.bat text eol=crlf``, as torch has) is not an edit.

Each case edits a checkout of a tagged repository with one submodule, hides the edit the way the
case names, and asks ``local_changes`` (what a build records in its manifest's ``modified``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from srcbuild.sources import written
from srcbuild.sources.localdiff import local_changes

pytestmark = pytest.mark.integration

SUB = "third_party/sub"
FILE = "csrc/ops.c"


def git(repo: Path, *args: str) -> str:
    argv = ["git", "-c", "protocol.file.allow=always", "-C", str(repo), *args]
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True, env=dict(os.environ)).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A clone of tag v1 of a repository with ``csrc/ops.c``, a ``.gitignore`` and submodule ``third_party/sub``."""
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main")
    (sub / "kernel.cu").write_text("__global__ void k() {}\n")
    git(sub, "add", ".")
    git(sub, "commit", "-q", "-m", "sub")
    top = tmp_path / "top"
    (top / "csrc").mkdir(parents=True)
    git(top, "init", "-q", "-b", "main")
    (top / FILE).write_text("int op(void) { return 1; }\n/* $Id$ */\n")
    (top / ".gitignore").write_text("build/\n")
    (top / ".gitattributes").write_text("*.bat text eol=crlf\n")
    (top / "run.bat").write_text("@echo off\nbuild.exe\n")
    git(top, "submodule", "add", "-q", str(sub), SUB)
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "v1")
    git(top, "tag", "-a", "v1", "-m", "v1")
    co = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(top), str(co))
    git(co, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", "refs/tags/v1")
    git(co, "submodule", "update", "-q", "--init")
    assert (co / "run.bat").read_bytes() == b"@echo off\r\nbuild.exe\r\n"  # converted on checkout
    return co


def changes(co: Path) -> tuple[str, ...]:
    return local_changes(co, (), [SUB], tag="v1", environ=dict(os.environ)).files


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "/* edited */\n")


def assume_unchanged(co: Path) -> None:
    edit(co / FILE)
    git(co, "update-index", "--assume-unchanged", FILE)


def skip_worktree(co: Path) -> None:
    edit(co / FILE)
    git(co, "update-index", "--skip-worktree", FILE)


def local_commit(co: Path) -> None:
    edit(co / FILE)
    git(co, "commit", "-q", "-am", "local")


def replaced_tag_commit(co: Path) -> None:
    """``git replace`` the tag's commit with one carrying the edit, then check it out: git itself
    then reports the edited tree as the tag's."""
    tag = git(co, "rev-parse", "refs/tags/v1^{commit}").strip()
    edit(co / FILE)
    git(co, "commit", "-q", "-am", "evil")
    evil = git(co, "rev-parse", "HEAD").strip()
    git(co, "replace", tag, evil)
    git(co, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", tag)
    assert git(co, "diff", "--name-only", "refs/tags/v1").strip() == ""  # git alone sees nothing


def submodule_assume_unchanged(co: Path) -> None:
    edit(co / SUB / "kernel.cu")
    git(co / SUB, "update-index", "--assume-unchanged", "kernel.cu")


def submodule_local_commit(co: Path) -> None:
    edit(co / SUB / "kernel.cu")
    git(co / SUB, "commit", "-q", "-am", "local")


def excluded_untracked(co: Path) -> None:
    (co / "csrc" / "extra.c").write_text("int extra(void) { return 2; }\n")
    (co / ".git" / "info").mkdir(exist_ok=True)
    (co / ".git" / "info" / "exclude").write_text("csrc/extra.c\n")


# a clean filter that turns the edited file back into the pinned one: git itself then sees no change
UNDO_EDIT = "sed -e '/edited/d'"


def clean_filter_in_info_attributes(co: Path) -> None:
    edit(co / FILE)
    (co / ".git" / "info").mkdir(exist_ok=True)
    (co / ".git" / "info" / "attributes").write_text("* filter=undo\n")
    git(co, "config", "filter.undo.clean", UNDO_EDIT)
    assert git(co, "diff", "--name-only").strip() == ""  # git alone sees nothing


def clean_filter_in_attributes_file(co: Path) -> None:
    edit(co / FILE)
    attributes = co.parent / "global-attributes"
    attributes.write_text("* filter=undo\n")
    git(co, "config", "core.attributesFile", str(attributes))
    git(co, "config", "filter.undo.clean", UNDO_EDIT)
    assert git(co, "diff", "--name-only").strip() == ""


def clean_filter_in_tree_attributes(co: Path) -> None:
    """A gitattributes file in the working tree that names the filter, itself hidden by a local exclude."""
    edit(co / FILE)
    (co / "csrc" / ".gitattributes").write_text("* filter=undo\n")
    (co / ".git" / "info").mkdir(exist_ok=True)
    (co / ".git" / "info" / "exclude").write_text("csrc/.gitattributes\n")
    git(co, "config", "filter.undo.clean", UNDO_EDIT)
    assert git(co, "diff", "--name-only").strip() == ""


def smudge_filter_on_checkout(co: Path) -> None:
    """A smudge filter that writes other code on checkout, with the clean filter that undoes it."""
    (co / ".git" / "info").mkdir(exist_ok=True)
    (co / ".git" / "info" / "attributes").write_text("csrc/*.c filter=inject\n")
    git(co, "config", "filter.inject.smudge", "sed -e 's/return 1/return 2/'")
    git(co, "config", "filter.inject.clean", "sed -e 's/return 2/return 1/'")
    (co / FILE).unlink()
    git(co, "checkout", "--", FILE)
    assert "return 2" in (co / FILE).read_text()
    assert git(co, "status", "--porcelain").strip() == ""


def textconv_in_info_attributes(co: Path) -> None:
    edit(co / FILE)
    (co / ".git" / "info").mkdir(exist_ok=True)
    (co / ".git" / "info" / "attributes").write_text("* diff=undo\n")
    git(co, "config", "diff.undo.textconv", UNDO_EDIT)


def ident_in_info_attributes(co: Path) -> None:
    """``ident`` collapses ``$Id: anything $`` to ``$Id$`` when git reads the file."""
    path = co / FILE
    path.write_text(path.read_text().replace("$Id$", "$Id: */ int hidden(void) { return 3; } /* $"))
    (co / ".git" / "info").mkdir(exist_ok=True)
    (co / ".git" / "info" / "attributes").write_text("csrc/*.c ident\n")
    assert git(co, "diff", "--name-only").strip() == ""


def eol_in_info_attributes(co: Path) -> None:
    """``text`` makes git read CR LF as LF: carriage returns added to a file are invisible to it."""
    path = co / FILE
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    (co / ".git" / "info").mkdir(exist_ok=True)
    (co / ".git" / "info" / "attributes").write_text("csrc/*.c text\n")
    git(co, "add", "--renormalize", ".")
    assert git(co, "status", "--porcelain").strip() == ""


def untracked_hidden_by_its_own_gitignore(co: Path) -> None:
    (co / "csrc" / "extra.c").write_text("int extra(void) { return 2; }\n")
    (co / "csrc" / ".gitignore").write_text("*\n")  # ignores itself and its neighbours
    assert git(co, "status", "--porcelain").strip() == ""


CASES: dict[str, tuple[Callable[[Path], None], set[str]]] = {
    "assume-unchanged": (assume_unchanged, {FILE}),
    "skip-worktree": (skip_worktree, {FILE}),
    "local-commit": (local_commit, {FILE}),
    "git-replace": (replaced_tag_commit, {FILE}),
    "submodule-assume-unchanged": (submodule_assume_unchanged, {f"{SUB}/kernel.cu"}),
    "submodule-local-commit": (submodule_local_commit, {f"{SUB}/kernel.cu"}),
    "untracked-hidden-by-info-exclude": (excluded_untracked, {"csrc/extra.c"}),
    "untracked-hidden-by-its-own-gitignore": (
        untracked_hidden_by_its_own_gitignore,
        {"csrc/extra.c", "csrc/.gitignore"},
    ),
    "clean-filter-in-info-attributes": (clean_filter_in_info_attributes, {FILE}),
    "clean-filter-in-core-attributesfile": (clean_filter_in_attributes_file, {FILE}),
    "clean-filter-in-tree-gitattributes": (clean_filter_in_tree_attributes, {FILE, "csrc/.gitattributes"}),
    "smudge-filter-on-checkout": (smudge_filter_on_checkout, {FILE}),
    "textconv-in-info-attributes": (textconv_in_info_attributes, {FILE}),
    "ident-in-info-attributes": (ident_in_info_attributes, {FILE}),
    "eol-in-info-attributes": (eol_in_info_attributes, {FILE}),
}


def build_writes(checkout: Path, files: dict[str, bytes]) -> None:
    """What a step that writes the checkout does, as the executor runs it (srcbuild.sources.written)."""
    env = dict(os.environ)
    written.before_writing(checkout, env)
    for rel, data in files.items():
        (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout / rel).write_bytes(data)
    written.after_writing(checkout, env)


def test_a_fresh_checkout_is_clean(checkout: Path) -> None:
    build_writes(checkout, {"build/ops.o": b"\x7fELF"})  # the build's, in a directory the tree ignores
    assert changes(checkout) == ()


def test_a_file_dropped_in_an_ignored_output_dir_is_a_modification(checkout: Path) -> None:
    build_writes(checkout, {"build/ops.o": b"\x7fELF", "build/lib/ops.so": b"\x7fELF"})
    assert changes(checkout) == ()
    (checkout / "build" / "evil.o").write_bytes(b"\x7fELF not built here")  # ignored by the tree's .gitignore
    assert changes(checkout) == ("build/evil.o",)
    # a file the build wrote, changed by hand with its size and mtime kept: its ctime moved
    st = os.stat(checkout / "build" / "ops.o")
    (checkout / "build" / "ops.o").write_bytes(b"\x7fELG")
    os.utime(checkout / "build" / "ops.o", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert changes(checkout) == ("build/evil.o", "build/ops.o")
    # a resume: the next writing step overwrites both, yet they stay modifications (sticky)
    build_writes(checkout, {"build/ops.o": b"\x7fELF", "build/evil.o": b"\x7fELF"})
    assert changes(checkout) == ("build/evil.o", "build/ops.o")
    digest = local_changes(checkout, (), [SUB], tag="v1", environ=dict(os.environ)).diff_sha256
    assert len(digest) == 64


def test_an_untracked_file_with_no_record_of_the_build_is_a_modification(checkout: Path) -> None:
    (checkout / "build").mkdir()
    (checkout / "build" / "ops.o").write_bytes(b"\x7fELF")  # no step wrote it: not the build's
    assert changes(checkout) == ("build/ops.o",)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hidden_edit_is_a_modification(checkout: Path, case: str) -> None:
    hide, expected = CASES[case]
    hide(checkout)
    found = set(changes(checkout))
    assert expected <= found, found


def test_a_local_commit_is_a_modification_even_when_its_files_are_undone(checkout: Path) -> None:
    git(checkout, "commit", "-q", "--allow-empty", "-m", "nothing")
    (found,) = changes(checkout)
    assert found.startswith("HEAD (at ") and found.endswith(")")
    assert local_changes(checkout, (), [SUB], tag="v1", environ=dict(os.environ)).diff_sha256
