"""``srcbuild --help`` printed without click (``srcbuild.usage``) is what click prints, at every width."""

from __future__ import annotations

import pytest

from srcbuild.cli import cli, main
from srcbuild.usage import help_text, help_width


@pytest.mark.parametrize("columns", range(20, 131))
def test_the_text_is_clicks_at_every_width(
    columns: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a fresh process has no command loaded yet: click lists each from its summary, as srcbuild.usage does
    monkeypatch.setattr(cli, "commands", {})
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["--help"]) == 0
    text = help_text(help_width({"COLUMNS": str(columns)}, None))
    assert text is not None
    assert text + "\n" == capsys.readouterr().out


def test_the_width_is_clicks() -> None:
    assert help_width({}, None) == 78  # no terminal, no COLUMNS: 80
    assert help_width({}, 200) == 98  # at most 100, less 2
    assert help_width({"COLUMNS": "60"}, 200) == 58  # COLUMNS first, as shutil.get_terminal_size
    assert help_width({"COLUMNS": "junk"}, 70) == 68
    assert help_width({"COLUMNS": "0"}, None) == 78
    assert help_width({}, 30) == 50  # at least 50


def test_a_text_textwrap_could_wrap_otherwise_is_left_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    import srcbuild.usage as usage

    assert help_text(78) is not None
    # a hyphenated word where a line must break: textwrap may break after the hyphen
    monkeypatch.setattr(usage, "GROUP_HELP", "word " * 20 + "well-known words")
    assert help_text(78) is None
    monkeypatch.setattr(usage, "GROUP_HELP", "a short well-known line")  # no break: the hyphen is kept whole
    assert help_text(78) is not None
    monkeypatch.setattr(usage, "GROUP_HELP", "x" * 90)  # a word longer than the line
    assert help_text(78) is None
    monkeypatch.setattr(usage, "GROUP_HELP", "two  spaces")
    assert help_text(78) is None


def test_it_lists_the_build_command_of_every_registered_package() -> None:
    from srcbuild.packages import PACKAGES
    from srcbuild.usage import PACKAGE_SUMMARIES

    assert {name: spec.summary for name, spec in PACKAGES.items()} == PACKAGE_SUMMARIES


def test_the_console_script_collects_garbage_less_often(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc
    import sys

    from srcbuild.__main__ import YOUNG_GENERATION, entrypoint

    before = gc.get_threshold()
    monkeypatch.setattr(sys, "argv", ["srcbuild", "--help"])
    try:
        with pytest.raises(SystemExit) as done:
            entrypoint()
        assert done.value.code == 0 and gc.get_threshold() == (YOUNG_GENERATION, *before[1:])
    finally:
        gc.set_threshold(*before)
    assert capsys.readouterr().out.startswith("Usage: srcbuild [OPTIONS] COMMAND [ARGS]...\n")
