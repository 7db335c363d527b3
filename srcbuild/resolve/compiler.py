"""Where the recipe's gcc is selected: an update-alternatives tree, private or the system's.

Private (the default): an alternatives tree in the work dir, made with
``update-alternatives --altdir A --admindir D --log L``; its ``bin`` goes first on PATH and
``CC``/``CXX``/``CUDAHOSTCXX`` point into it. Nothing outside the work dir changes.
``--log`` is always passed: without it, root appends to the system's alternatives log
(research notes, feasibility.md §3, tested with dpkg 1.21.22).

System (``--system-alternatives``): the system's database in ``/usr/bin``. This module only
decides where the links are and which variables point at them; ``srcbuild.plan.compiler``
makes the commands and ``srcbuild.execute.compiler`` restores a system selection.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild.envmods import EnvChanges
from srcbuild.records import record

PRIORITY = "50"


@record
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
