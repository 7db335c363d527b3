"""Every ``srcbuild`` command shown in README.md and docs/*.md, as argument lists.

Commands come from fenced shell (or untyped) code blocks: lines that start with ``srcbuild`` (after an optional
``$ `` prompt, ``~/.srcbuild/bin/`` or ``VAR=value`` prefixes and a leading ``... &&``), and
commands quoted in backticks inside those blocks (hints in example output). ``[--option]``
marks an optional part and is dropped; a line with ``...`` or ``…`` in it is an elision, not a
command, and is left out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^```(?P<lang>[^\n]*)\n(.*?)^```", re.S | re.M)
_SHELL_BLOCKS = ("", "bash", "sh", "shell", "console", "text")
_COMMAND = re.compile(r"^(?:\$ )?(?:\S+=\S+ )*(?:\S*/)?srcbuild (?P<args>.*)$")
_QUOTED = re.compile(r"`(?:\S*/)?srcbuild (?P<args>[^`]*)`")


@dataclass(frozen=True)
class DocCommand:
    file: str
    line: int
    argv: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}: srcbuild {shlex.join(self.argv)}"


def _argv(text: str) -> tuple[str, ...] | None:
    text = re.sub(r"\s+#.*$", "", text)
    if "..." in text or "…" in text:
        return None
    text = re.sub(r"\[[^\]]*\]", "", text)
    return tuple(shlex.split(text))


def doc_commands() -> list[DocCommand]:
    found: list[DocCommand] = []
    for path in DOC_FILES:
        text = path.read_text()
        for block in _FENCE.finditer(text):
            if block.group("lang").strip() not in _SHELL_BLOCKS:
                continue
            first_line = text.count("\n", 0, block.start(2)) + 1
            for offset, raw in enumerate(block.group(2).splitlines()):
                line = raw.strip()
                if line.startswith("#"):
                    continue
                candidates = [m.group("args") for m in _QUOTED.finditer(line)]
                line = line.split("&&")[-1].strip()
                match = _COMMAND.match(line)
                if match and not candidates:
                    candidates = [match.group("args")]
                for args in candidates:
                    argv = _argv(args)
                    if argv and not argv[0].endswith(":"):  # "srcbuild recommend: ..." is output
                        found.append(DocCommand(path.relative_to(REPO_ROOT).as_posix(), first_line + offset, argv))
    return found
