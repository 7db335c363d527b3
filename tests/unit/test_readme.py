"""README and docs stay true: every recipe key documented, the two commands first, and every
``srcbuild`` command they show parses with the real command line (options, choices, required
arguments). tests/integration/test_doc_commands.py runs the ones that work offline."""

from __future__ import annotations

import warnings

import click
import pytest
from doc_commands import REPO_ROOT, DocCommand, doc_commands

from srcbuild.cli import cli
from srcbuild.recipe.schema import recipe_schema

README = (REPO_ROOT / "README.md").read_text()


def parse_command_line(argv: tuple[str, ...]) -> list[str]:
    """Parse ``argv`` down to its leaf command without running it; the command path."""
    with warnings.catch_warnings():  # click 8.2+ deprecates protected_args but still fills it
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx = cli.make_context("srcbuild", list(argv))
        names: list[str] = []
        command: click.Command = cli
        args = [*getattr(ctx, "protected_args", []), *ctx.args]
        while isinstance(command, click.Group):
            name, sub, rest = command.resolve_command(ctx, args)
            assert sub is not None and name is not None
            names.append(name)
            ctx = sub.make_context(name, rest, parent=ctx)
            command = sub
            args = [*getattr(ctx, "protected_args", []), *ctx.args]
    return names


def test_readme_documents_every_recipe_key() -> None:
    for key, spec in recipe_schema().items():
        if isinstance(spec, dict):
            for sub in spec:
                assert f"{sub}" in README, f"{key}.{sub} is not in README's recipe reference"
            assert f"`{key}." in README
        else:
            assert f"`{key}`" in README


def test_readme_leads_with_install_and_the_main_job_then_the_tests() -> None:
    head = README.split("\n## ")[0]
    block = head.split("```bash\n")[1].split("```")[0]
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert commands == [
        "bash install.sh && ~/.srcbuild/bin/srcbuild torch --recipe kepler-cu102",
        "bash tests/run.sh",
    ]
    for script in ("install.sh", "tests/run.sh", "tests/setup.sh"):
        assert (REPO_ROOT / script).is_file()


def test_the_docs_show_commands() -> None:
    files = {command.file for command in doc_commands()}
    assert "README.md" in files and "docs/building.md" in files and len(doc_commands()) > 20


@pytest.mark.parametrize("command", doc_commands(), ids=lambda c: f"{c.file}:{c.line}")
def test_every_documented_command_parses(command: DocCommand) -> None:
    try:
        names = parse_command_line(command.argv)
    except click.ClickException as exc:
        pytest.fail(f"{command.where}: {exc.format_message()}")
    assert names, command.where


def test_the_quick_start_uses_one_recipe_the_one_recommend_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json
    import re

    from srcbuild.cli import main

    quick = README.split("\n## Quick start")[1].split("```bash\n")[1].split("```")[0]
    head = README.split("\n## ")[0]
    gpu = re.search(r'recommend --gpu "([^"]+)"', quick)
    assert gpu is not None
    assert main(["recommend", "--gpu", gpu.group(1), "--json"]) == 0
    recommended = json.loads(capsys.readouterr().out)["gpus"][0]["recommended"]
    named = set(re.findall(r"--recipe (\S+)", quick + head))
    assert named == {recommended}
