"""The commands that select the recipe's gcc with update-alternatives, and their shell restore lines.

The tree comes from the resolved build (``srcbuild.resolve.compiler.AlternativesTree``); the
system selection is recorded and restored by ``srcbuild.execute.compiler.SystemSelection``.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from srcbuild.command import Command
from srcbuild.resolve.compiler import AlternativesTree


def selection_commands(tree: AlternativesTree, gcc: Path, gxx: Path | None, major: str) -> tuple[Command, ...]:
    """The commands that make ``tree``'s gcc/g++ the recipe's gcc."""
    cmds: list[Command] = []
    if tree.altdir is not None and tree.admindir is not None:
        dirs = [str(tree.links_dir), str(tree.altdir), str(tree.admindir)]
        cmds.append(Command(("mkdir", "-p", *dirs), "create the private alternatives tree"))
    cmds.append(Command(tree.install_argv(gcc, gxx), f"register gcc-{major} (with g++, cc, c++) as an alternative"))
    cmds.append(Command(tree.set_argv(gcc), f"select gcc-{major} for this build"))
    return tuple(cmds)



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
