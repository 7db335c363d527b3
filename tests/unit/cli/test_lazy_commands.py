"""The command list of ``srcbuild --help`` comes from summaries, not from importing each command."""

from __future__ import annotations

import click

from srcbuild.cli import _commands, cli


def test_each_summary_is_the_start_of_its_command_help() -> None:
    ctx = click.Context(cli)
    for name, (_target, summary) in _commands().items():
        command = cli.get_command(ctx, name)
        assert command is not None, name
        help_text = " ".join((command.help or "").split())
        assert help_text.startswith(summary.rstrip(".")), f"{name}: {summary!r} is not how {help_text!r} starts"


def test_help_lists_every_command_with_its_summary(capsys) -> None:  # type: ignore[no-untyped-def]
    from srcbuild.cli import main

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == sorted(_commands())
    assert "  torch        Build a torch wheel for a recipe (or take it from the cache)." in out
    assert all(len(line) <= 100 for line in out.splitlines())
