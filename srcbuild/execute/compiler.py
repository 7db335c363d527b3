"""Selecting the recipe's gcc with update-alternatives, privately or (on request) system-wide.

Private (the default): an alternatives tree in the work dir, made with
``update-alternatives --altdir A --admindir D --log L``; its ``bin`` goes first on PATH and
``CC``/``CXX``/``CUDAHOSTCXX`` point into it. Nothing outside the work dir changes.
``--log`` is always passed: without it, root appends to the system's alternatives log
(research notes, feasibility.md §3, tested with dpkg 1.21.22).

System (``--system-alternatives``): the classic instructions' ``update-alternatives --install
/usr/bin/gcc gcc /usr/bin/gcc-N ...`` and ``--set``; it needs root. ``SystemSelection`` records the
selection before and puts it back afterwards, also when the build fails.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.errors import StepFailed

PRIORITY = "50"


@dataclass(frozen=True)
class AlternativesTree:
    """An update-alternatives database: ``altdir``/``admindir`` None means the system's."""

    links_dir: Path  # where the gcc/g++ links are
    altdir: Path | None = None
    admindir: Path | None = None
    log: Path | None = None
    program: str = "update-alternatives"

    def argv(self, *args: str) -> tuple[str, ...]:
        out = [self.program]
        if self.altdir is not None:
            out += ["--altdir", str(self.altdir)]
        if self.admindir is not None:
            out += ["--admindir", str(self.admindir)]
        if self.log is not None:
            out += ["--log", str(self.log)]
        return (*out, *args)

    def install_argv(self, gcc: Path, gxx: Path | None) -> tuple[str, ...]:
        args = ["--install", str(self.links_dir / "gcc"), "gcc", str(gcc), PRIORITY]
        args += ["--slave", str(self.links_dir / "cc"), "cc", str(gcc)]
        if gxx is not None:
            args += ["--slave", str(self.links_dir / "g++"), "g++", str(gxx)]
            args += ["--slave", str(self.links_dir / "c++"), "c++", str(gxx)]
        return self.argv(*args)

    def set_argv(self, gcc: Path) -> tuple[str, ...]:
        return self.argv("--set", "gcc", str(gcc))


def private_tree(root: Path, program: str = "update-alternatives") -> AlternativesTree:
    return AlternativesTree(
        links_dir=root / "bin",
        altdir=root / "alt",
        admindir=root / "admin",
        log=root / "update-alternatives.log",
        program=program,
    )


def selection_commands(tree: AlternativesTree, gcc: Path, gxx: Path | None, major: str) -> tuple[Command, ...]:
    """The commands that make ``tree``'s gcc/g++ the recipe's gcc."""
    cmds: list[Command] = []
    if tree.altdir is not None and tree.admindir is not None:
        dirs = [str(tree.links_dir), str(tree.altdir), str(tree.admindir)]
        cmds.append(Command(("mkdir", "-p", *dirs), "create the private alternatives tree"))
    cmds.append(Command(tree.install_argv(gcc, gxx), f"register gcc-{major} (with g++, cc, c++) as an alternative"))
    cmds.append(Command(tree.set_argv(gcc), f"select gcc-{major} for this build"))
    return tuple(cmds)


def compiler_env(tree: AlternativesTree, cuda: bool, private: bool) -> EnvChanges:
    """CC, CXX and CUDAHOSTCXX pointing at the selected links; the links dir first on PATH."""
    env = EnvChanges()
    if private:
        env = env.prepend("PATH", str(tree.links_dir), "compiler (private alternatives first on PATH)")
    env = env.set("CC", str(tree.links_dir / "gcc"), "compiler")
    env = env.set("CXX", str(tree.links_dir / "g++"), "compiler")
    if cuda:
        env = env.set("CUDAHOSTCXX", str(tree.links_dir / "g++"), "compiler (nvcc host compiler)")
    return env


@dataclass(frozen=True)
class Selection:
    """What ``update-alternatives --query gcc`` said: None value means no such alternative."""

    status: str | None  # "auto" / "manual" / None
    value: str | None
    link_target: str | None = None  # where the gcc link pointed when it was no alternative
    alternatives: tuple[str, ...] = ()  # the alternatives registered before


def parse_query(text: str | None) -> Selection:
    if not text:
        return Selection(None, None)
    fields: dict[str, str] = {}
    alternatives: list[str] = []
    head = True
    for line in text.splitlines():
        if not line.strip():
            head = False  # the first stanza describes the group; one stanza per alternative follows
            continue
        key, _, value = line.partition(":")
        if head:
            fields[key.strip()] = value.strip()
        elif key.strip() == "Alternative":
            alternatives.append(value.strip())
    return Selection(fields.get("Status"), fields.get("Value"), alternatives=tuple(alternatives))


class SystemSelection:
    """Select gcc in an existing alternatives database and put the old selection back afterwards.

    ``tree`` is the system's database in real use; tests pass a private one standing in for it.
    """

    def __init__(self, tree: AlternativesTree, log_path: Path | None = None) -> None:
        self.tree = tree
        self.log_path = log_path
        self.previous: Selection | None = None

    def record(self) -> Selection:
        text = proc.probe(self.tree.argv("--query", "gcc"))
        selection = parse_query(text)
        if selection.value is None:
            link = self.tree.links_dir / "gcc"
            target = str(link.resolve()) if link.exists() else None
            selection = Selection(None, None, target)
        self.previous = selection
        return selection

    def restore_commands(self, installed: Path) -> tuple[tuple[str, ...], ...]:
        """The commands that undo the selection (given what ``record`` found)."""
        prev = self.previous
        if prev is None:
            return ()
        out: list[tuple[str, ...]] = []
        if str(installed) not in prev.alternatives:
            out.append(self.tree.argv("--remove", "gcc", str(installed)))  # srcbuild registered it
        if prev.value is None:
            return tuple(out)
        if prev.status == "auto":
            out.append(self.tree.argv("--auto", "gcc"))
        else:
            out.append(self.tree.argv("--set", "gcc", prev.value))
        return tuple(out)

    def restore(self, installed: Path) -> None:
        """Put back what ``record`` saw; a plain link that was replaced is recreated."""
        for argv in self.restore_commands(installed):
            result = proc.run(argv, log_path=self.log_path)
            if not result.ok:
                cmd = proc.format_argv(argv)
                raise StepFailed(
                    f"could not restore the previous gcc selection: {cmd} exited {result.returncode}",
                    "restore it by hand with update-alternatives --config gcc",
                )
        prev = self.previous
        if prev is not None and prev.value is None and prev.link_target:
            link = self.tree.links_dir / "gcc"
            if not link.exists() and not link.is_symlink():
                link.symlink_to(prev.link_target)


def shell_restore_lines(tree: AlternativesTree) -> Sequence[str]:
    """For ``plan --format shell``: save the selection and restore it on exit."""
    query = shlex.join(tree.argv("--query", "gcc"))
    auto = shlex.join(tree.argv("--auto", "gcc"))
    setv = shlex.join(tree.argv("--set", "gcc"))
    return (
        f"SRCBUILD_PREV_GCC=$({query} 2>/dev/null | sed -n 's/^Value: //p' | head -n1)",
        f"SRCBUILD_PREV_STATUS=$({query} 2>/dev/null | sed -n 's/^Status: //p' | head -n1)",
        "srcbuild_restore_gcc() {",
        f'  if [ "$SRCBUILD_PREV_STATUS" = auto ]; then {auto};',
        f'  elif [ -n "$SRCBUILD_PREV_GCC" ]; then {setv} "$SRCBUILD_PREV_GCC"; fi',
        "}",
        "trap srcbuild_restore_gcc EXIT",
    )
