"""The facts README.md and docs/ show beside commands agree with the tool, read from the tool (the
knowledge base, the exit-code table), never from a copy kept here: an official wheel's pip command,
the date the knowledge was last checked, and every "exit N"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from srcbuild import errors
from srcbuild.advice.window import window_for
from srcbuild.knowledge import load_knowledge
from tests.doc_commands import DOC_FILES, REPO_ROOT

PIP = re.compile(
    r"pip install (torch==\S+ torchvision==\S+ (?:--index-url|-f)\s+https://download\.pytorch\.org/\S+?)[`)\s]"
)


def _texts() -> dict[str, str]:
    return {str(path.relative_to(REPO_ROOT)): path.read_text(encoding="utf-8") for path in DOC_FILES}


def _official_pips() -> set[str]:
    kb = load_knowledge()
    pips = set()
    for cc in {chip.cc for chip in kb.gpu_chips}:
        official = window_for(kb, cc).official
        if official is not None and official.pip:
            pips.add(" ".join(official.pip.split()))
    return pips


def test_every_official_wheel_command_in_the_docs_is_one_the_tool_gives() -> None:
    pips = _official_pips()
    shown = [
        (name, " ".join(("pip install " + m.group(1)).split()))
        for name, text in _texts().items()
        for m in PIP.finditer(text.replace("\\\n", " "))
    ]
    assert shown, "the docs show no official wheel's pip command"
    assert [(name, pip) for name, pip in shown if pip not in pips] == []


def test_the_knowledge_date_in_the_docs_is_the_tools() -> None:
    checked = load_knowledge().checked
    dates = [
        (name, m.group(1))
        for name, text in _texts().items()
        for m in re.finditer(r"knowledge last checked:? (\d{4}-\d\d-\d\d)", text)
    ]
    assert dates and [(name, d) for name, d in dates if d != checked] == []


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_every_exit_code_the_docs_name_is_one_the_tool_has(path: Path) -> None:
    """srcbuild's exit codes, from the error classes; a program's own ("apt-get ... failed (exit
    100)") and a signal's (137, 139: a compiler killed) are not srcbuild's."""
    codes = {c.exit_code for c in vars(errors).values() if isinstance(c, type) and hasattr(c, "exit_code")}
    text = path.read_text(encoding="utf-8")
    named = {
        int(m.group(1))
        for m in re.finditer(r"(?<!failed \()\bexit (?:code )?(\d+)\b", text)
        if int(m.group(1)) < 128 or int(m.group(1)) == 130
    }
    assert named - codes - {0, 1, 70} == set()  # 0 success, 1 a test or CI failure, 70 an internal error
