"""Every srcbuild command srcbuild prints (hints, ``fix:`` lines, answers, the command that
continues an interrupted one) is accepted when pasted: its options and arguments parse as the
command line's own parser reads them (no unknown option, no missing argument, no file that is not
there), and those that only read (recipes, compat, recommend, plan, cache ls/show, env, mirror
plan) are run, in the test's sandbox of directories, and must not fail as a usage error.

The outputs come from failure paths and answers of many commands, and from Ctrl-C in each long
command (the hint names the command that continues it)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

import click
import pytest

from srcbuild import cli as cli_module
from srcbuild.cli import main
from tests.integration.docs.test_pasted_commands import commands

pytestmark = pytest.mark.integration

FAILURES: list[list[str]] = [
    ["recommend", "--gpu", "GTX 1800"],
    ["recommend", "--gpu", "RTX 3090", "--mpi"],
    ["recommend", "--gpu", "GeForce GTX 1080"],
    ["compat", "--gpu", "Tesla V100"],
    ["install", "torch", "--recipe", "kepler-cu102", "--into", "{tmp}/venv", "--create"],
    ["install", "torch", "--recipe", "kepler-cu92", "--dry-run", "--python", "/usr/bin/python3"],
    ["cache", "push", "--remote", "{tmp}"],
    ["cache", "pull", "--remote", "{tmp}/nowhere"],
    ["cache", "show", "nothing"],
    ["cache", "add", "{tmp}/no.whl", "--arch", "3.7"],
    ["recipes", "new", "k80b", "--extends", "kepler-k80-cu118", "--dir", "{tmp}/recipes"],
    ["recipes", "show", "kepler-k80"],
    ["cache", "key", "new", "--signing-key", "{tmp}/keys/k"],
    ["plan", "torch", "--recipe", "cpu"],
]
# outputs that name no srcbuild command to run (a did-you-mean, a path to check)
SILENT = ["recommend --gpu GTX 1800", "cache pull", "cache add", "recipes show", "plan torch"]
# Ctrl-C in each long command: the hint is the command line that continues it
LONG: list[list[str]] = [
    ["torch", "--recipe", "kepler-cu102"],
    ["torchvision", "--recipe", "pascal-cu126", "--max-jobs", "2"],
    ["torchaudio", "--recipe", "pascal-cu126"],
    ["ext", "torch-scatter==2.1.2", "--recipe", "kepler-k80-cu118"],
    ["toolchain", "install", "cudnn", "9.10", "--cuda", "12.6"],
    ["toolchain", "install", "--recipe", "kepler-cu102"],
    ["mirror", "create", "{tmp}/m", "--recipe", "kepler-cu92"],
    ["cache", "pull", "--remote", "{tmp}/share"],
    ["env", "runtime", "--python", "3.11", "--into", "{tmp}/rt"],
    ["cache", "push", "--remote", "{tmp}/share"],
    ["install", "torch", "--recipe", "kepler-cu102", "--into", "{tmp}/venv"],
    ["doctor"],
]
RUNS = {"recipes", "compat", "recommend", "plan", "env", "config"}  # what only reads: run when printed


def _leaf(args: Sequence[str]) -> tuple[click.Command, list[str], click.Context]:
    """The command ``args`` name and the arguments left for it (global options skipped)."""
    command: click.Command = cli_module.cli
    ctx = click.Context(cli_module.cli, info_name="srcbuild")
    rest = list(args)
    while isinstance(command, click.Group) and rest:
        word = rest[0]
        if word.startswith("-"):
            rest = rest[1:]
            continue
        found = command.get_command(ctx, word)
        assert found is not None, f"srcbuild has no command {word!r}"
        ctx = click.Context(found, parent=ctx, info_name=word)
        command, rest = found, rest[1:]
    return command, rest, ctx


def accepted(line: str) -> list[str]:
    """The srcbuild command in ``line`` parsed as the command line parses it; fails the test otherwise."""
    args = shlex.split(line)[1:]
    command, rest, ctx = _leaf(args)
    try:
        command.make_context(ctx.info_name, rest, parent=ctx.parent)
    except click.exceptions.Exit:
        pass
    except click.UsageError as exc:
        pytest.fail(f"printed command is refused: {line}\n  {exc.format_message()}")
    return args


def _output(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    main(argv)
    captured = capsys.readouterr()
    return (captured.out + captured.err).replace(" \\\n", " ")


def _srcbuild_commands(text: str) -> list[str]:
    found = [c for c in commands(text) if c.startswith("srcbuild ")]
    return [c.split(" (", 1)[0].rstrip(".;,") for c in found]


def check_all(text: str, tmp: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    checked = []
    for line in _srcbuild_commands(text):
        if any(word.isupper() and len(word) > 1 for word in shlex.split(line)):
            continue  # a placeholder to fill in (srcbuild torch --recipe R): parsed, not run
        args = accepted(line)
        if args and args[0] in RUNS and "--into" not in args:
            code = main(args)
            err = capsys.readouterr().err
            assert code != 2 or "error: no such option" not in err.lower(), f"{line}: {err}"
        checked.append(line)
    return checked


@pytest.mark.parametrize("argv", FAILURES, ids=" ".join)
def test_every_command_a_failure_or_an_answer_prints_is_accepted(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)
    text = _output([a.format(tmp=tmp_path) for a in argv], capsys)
    checked = check_all(text, tmp_path, capsys)
    assert checked or any(" ".join(argv).startswith(s) for s in SILENT), (
        f"no srcbuild command in the output of {argv}:\n{text}"
    )


@pytest.mark.parametrize("argv", LONG, ids=" ".join)
def test_an_interrupted_long_command_prints_the_command_that_continues_it(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = [a.format(tmp=tmp_path) for a in argv]

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module.cli, "main", interrupted)
    assert main(argv) == 130
    err = capsys.readouterr().err
    monkeypatch.undo()
    hint = next(line for line in err.splitlines() if line.startswith("hint: "))
    assert hint.startswith("hint: continue with: srcbuild "), err
    (continued,) = _srcbuild_commands(hint.removeprefix("hint: "))
    accepted(continued)
    resumable = argv[0] in ("torch", "torchvision", "torchaudio", "ext")
    assert shlex.split(continued)[1:] == [*argv, *(["--resume"] if resumable else [])]


def test_the_check_refuses_what_the_command_line_refuses() -> None:
    """The hint toolchain install once printed (it has no --resume) is what this catches."""
    with pytest.raises(pytest.fail.Exception, match="No such option '--resume'"):
        accepted("srcbuild toolchain install cudnn 9.10 --cuda 12.6 --resume")
    with pytest.raises(AssertionError, match="no command 'tolchain'"):
        accepted("srcbuild tolchain install cuda 11.8")
    assert accepted("srcbuild torch --recipe kepler-cu102 --resume") == [
        "torch",
        "--recipe",
        "kepler-cu102",
        "--resume",
    ]
