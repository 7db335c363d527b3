"""Every command and hint srcbuild prints pastes from an 80-column terminal.

The outputs of many scenarios (recommend for each paste fixture, compat, plan, error paths) are
collected at 80 columns; every command in them (after a ``label:``, at the start of a line, or
between backticks) is put back together from its `` \\`` continuations and must parse with
``bash -n``, and every URL must be one the wide output has whole.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from worlds.conda_channel import channel_url, host_python_packages, make_channel

from srcbuild.cli import main
from srcbuild.console import command_span, shell_words

pytestmark = pytest.mark.integration

PASTE = Path(__file__).resolve().parents[2] / "fixtures" / "paste"
URL = re.compile(r"(?:https?|file|s3)://[^\s`'\")]+")

SCENARIOS: list[list[str]] = [
    *(["recommend", "--paste", str(path)] for path in sorted(PASTE.iterdir())),
    ["recommend", "--gpu", "GeForce GT 750M"],
    ["recommend", "--gpu", "Tesla K80", "--mpi"],
    ["recommend", "--gpu", "GTX 7500"],
    ["compat", "--gpu", "GeForce GT 750M"],
    ["compat", "--arch", "3.7"],
    ["compat", "--pci-id", "10de:1d10"],
    ["plan", "torch", "--recipe", "kepler-cu102"],
    ["plan", "torchvision", "--recipe", "pascal-cu126"],
    ["recipes", "check", "kepler-cu92"],
    ["recipes", "show", "no-such-recipe"],
    ["install", "torch", "--recipe", "kepler-cu102", "--into", "/nonexistent/venv"],
    ["toolchain", "install", "--recipe", "no-such-recipe.toml"],
]


def commands(text: str) -> Iterator[str]:
    """The commands in ``text``: a line's words from the first command word after a ``label:`` (or
    from its start), joined with the lines its `` \\`` continues on; and each `...`."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        words = shell_words(lines[index].strip())
        span = command_span(words)
        if span is not None:
            command = " ".join(words[span[0] : span[1]])
            while command.endswith(" \\") and index + 1 < len(lines):
                index += 1
                command = command[:-1] + lines[index].strip()
            yield command
        index += 1
    yield from re.findall(r"`([^`\n]+)`", text)


def run(argv: list[str], columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    main(argv)
    captured = capsys.readouterr()
    return captured.out + captured.err


@pytest.mark.parametrize("argv", SCENARIOS, ids=lambda argv: " ".join(a.rsplit("/", 1)[-1] for a in argv))
def test_every_printed_command_pastes(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = run(argv, 80, capsys, monkeypatch)
    wide = run(argv, 160, capsys, monkeypatch)
    assert set(URL.findall(narrow)) <= set(URL.findall(wide)), "a URL was split"
    found = list(commands(narrow))
    for command in found:
        checked = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True, check=False)
        assert checked.returncode == 0, f"{command!r} does not parse: {checked.stderr}"
    for command in commands(wide):  # the same commands, whole, at any width
        if command.startswith("pip install") or command.startswith("srcbuild "):
            assert command in found or len(command) > 160, command


def test_the_collector_sees_a_continued_command() -> None:
    text = "  no build needed:\n    pip install torch -f \\\n      https://example.org/whl/x.html\n"
    assert list(commands(text)) == ["pip install torch -f https://example.org/whl/x.html"]


def test_the_python_an_answer_needs_is_made_by_the_command_it_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no Python 3.5 to 3.7 on PATH, the GT 750M's answer (an official wheel for those) prints
    the command that makes one and the pip command run with it; both parse, and the first, pasted
    into bash, runs `srcbuild env runtime` for exactly that Python. Its channel here is a local one
    holding this machine's Python only (no conda-forge is reachable), so the solve for 3.7 fails in
    one line naming the version and the channel, leaving nothing behind; the making itself is
    tests/integration/envs/test_env_runtime.py's."""
    venv_bin = Path(sys.executable).parent  # srcbuild and this Python, nothing of 3.5 to 3.7
    bash = shutil.which("bash")
    assert bash is not None
    monkeypatch.setenv("PATH", str(venv_bin))
    found = list(commands(run(["recommend", "--gpu", "GeForce GT 750M"], 80, capsys, monkeypatch)))
    make = [c for c in found if c.startswith("srcbuild env runtime ")]
    install = [c for c in found if c.startswith("~/venvs/")]
    assert make == ["srcbuild env runtime --python 3.7 --into ~/venvs/torch-1.3.0"], found
    assert install and install[0].startswith("~/venvs/torch-1.3.0/bin/python -m pip install torch==1.3.0+cu101 ")
    assert install[0].endswith(" -f https://download.pytorch.org/whl/torch_stable.html")
    channel = make_channel(tmp_path / "conda-forge", host_python_packages())
    env = {
        "PATH": str(venv_bin),
        "HOME": str(tmp_path / "home"),
        "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
        "SRCBUILD_CHANNEL_MIRRORS": f"conda-forge={channel_url(channel)}",
        "COLUMNS": "300",
    }
    pasted = subprocess.run([bash, "-c", make[0]], capture_output=True, text=True, env=env, check=False)
    err = pasted.stderr.splitlines()
    assert pasted.returncode == 8, pasted.stdout + pasted.stderr
    assert err[0].startswith(f"error: making Python 3.7 from {channel_url(channel)}"), err
    assert err[1].startswith("hint: ")
    assert not (tmp_path / "home" / "venvs" / "torch-1.3.0").exists()
    assert not list((tmp_path / "home" / "venvs").glob(".torch-1.3.0*"))
