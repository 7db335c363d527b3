"""Selecting gcc system-wide (``--system-alternatives``) and putting the old selection back.

The classic instructions' ``update-alternatives --install /usr/bin/gcc gcc /usr/bin/gcc-N ...``
and ``--set`` need root. ``SystemSelection`` records the selection before the build and restores
it afterwards, also when the build fails. The tree itself is decided in
``srcbuild.resolve.compiler``; the selection commands are planned in ``srcbuild.plan.compiler``.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild import proc
from srcbuild.errors import StepFailed
from srcbuild.records import record
from srcbuild.resolve.compiler import AlternativesTree


@record
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
