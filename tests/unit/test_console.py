"""Output: width from COLUMNS/terminal/80, NO_COLOR and --no-color, -q/-v, and plain progress lines
when the output is not a terminal."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from srcbuild import console as out
from srcbuild.cli import main
from srcbuild.execute.progress import NinjaProgress, plain_progress_line


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _defaults() -> None:
    out.reset()


def test_width_is_columns_else_80_when_not_a_terminal() -> None:
    assert out.output_width(io.StringIO(), {}) == 80
    assert out.output_width(io.StringIO(), {"COLUMNS": "100"}) == 100
    assert out.output_width(io.StringIO(), {"COLUMNS": "1000"}) == out.MAX_WIDTH


def test_color_only_on_a_terminal_without_no_color() -> None:
    assert out.color_wanted(FakeTty(), {}) is True
    assert out.color_wanted(FakeTty(), {"NO_COLOR": "1"}) is False
    assert out.color_wanted(io.StringIO(), {}) is False
    out.configure(no_color=True)
    assert out.color_wanted(FakeTty(), {}) is False


def test_global_options_set_verbosity_and_color(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-v", "--no-color", "recipes", "list", "--json"]) == 0
    assert out.SETTINGS.verbosity is out.Verbosity.VERBOSE and out.SETTINGS.color is False
    assert main(["-q", "recipes", "list", "--json"]) == 0
    assert out.SETTINGS.verbosity is out.Verbosity.QUIET
    assert main(["recipes", "list", "--json"]) == 0
    assert out.SETTINGS.verbosity is out.Verbosity.NORMAL and out.SETTINGS.color is True
    capsys.readouterr()


def test_a_progress_console_is_silent_with_q() -> None:
    out.configure(quiet=True)
    stream = io.StringIO()
    out.make_console(file=stream, progress=True).print("==> [1/9] Preflight")
    out.make_console(file=stream).print("a table")
    assert stream.getvalue() == "a table\n"


def test_plain_progress_every_tenth_when_not_a_terminal() -> None:
    stream = io.StringIO()
    ticks = iter(range(1000))
    console = Console(file=stream, width=80)
    with NinjaProgress(console, "build", clock=lambda: float(next(ticks))) as bar:
        for n in range(1, 41):
            bar.feed(f"[{n}/40] Building C object x{n}.o")
        bar.feed("not a ninja line")
    lines = stream.getvalue().splitlines()
    percents = [int(line.split(":")[1].split("%")[0]) for line in lines]
    assert percents == [2, *range(10, 101, 10)]  # the first unit, then every tenth
    assert lines[-1].startswith("    build: 100% (40/40)")


def test_plain_progress_line() -> None:
    assert plain_progress_line("build", 36, 120, 80.0) == "    build: 30% (36/120), ETA 1m20s"
    assert plain_progress_line("build", 1, 120, None) == "    build: 0% (1/120)"


def test_a_long_line_continues_indented_two_more_columns() -> None:
    line = "  CUDA 10.2: run `srcbuild toolchain install --recipe kepler-cu102` (fetches it into a private prefix)"
    assert out.wrap_line(line, 60) == [  # `...` is never broken: it moves whole to the next line
        "  CUDA 10.2: run",
        "    `srcbuild toolchain install --recipe kepler-cu102`",
        "    (fetches it into a private prefix)",
    ]
    assert out.wrap_line("short", 40) == ["short"]
    assert out.wrap_line("x" * 50, 40) == ["x" * 50]  # a word too long (a URL, a path) stands whole


def test_a_command_is_never_broken_inside() -> None:
    line = "  no build needed: pip install torch==1.3.0+cu101 -f https://download.pytorch.org/whl/torch_stable.html"
    assert out.wrap_line(line, 60) == [
        "  no build needed:",
        "    pip install torch==1.3.0+cu101 -f \\",
        "      https://download.pytorch.org/whl/torch_stable.html",
    ]
    quoted = 'fix: srcbuild recommend --gpu "GeForce GT 750M" --mpi --json --paste lspci-of-the-laptop.txt'
    assert out.wrap_line(quoted, 40) == [
        "fix:",
        "  srcbuild recommend --gpu \\",
        '    "GeForce GT 750M" --mpi --json \\',
        "    --paste lspci-of-the-laptop.txt",
    ]
    assert out.wrap_line("hint: make sure the wheel has SASS for your GPU, or install a newer driver", 30)[0] == (
        "hint: make sure the wheel has"  # prose after a label stays prose
    )
    assert out.wrap_text("a b\n\n" + "word " * 20, 30) == (
        "a b\n\nword word word word word word\n  word word word word word\n  word word word word word\n"
        "  word word word word"
    )


def test_a_table_cell_is_text_not_markup() -> None:
    text = out.as_text(out.table("[pkgs]", ("package", "from"), [("python 3.8.*", "recipe [toolchain] python")]), 80)
    assert "[pkgs]" in text and "recipe [toolchain] python" in text


def test_a_table_wraps_inside_its_cells_and_never_cuts_a_word_or_a_path() -> None:
    path = "/home/user/.cache/srcbuild/toolchains/cuda-9.2-runfile/bin/nvcc"
    why = "recipe — the compiler CUDA 9.2 accepts, provisioned because the host gcc 12 is too new"
    text = out.as_text(out.table(None, ("setting", "value", "from"), [("nvcc", path, why), ("gcc", "7.5.0", "recipe")]))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(path in line for line in lines)  # whole, on one line
    words = [word for line in lines for word in line.split()]
    assert " ".join(words) == f"setting value from nvcc {path} {why} gcc 7.5.0 recipe"
    column = lines[0].index("from")
    assert lines[1] == "nvcc     " + path  # the path runs on past its column; "from" starts below it
    assert all(line[: column].strip() == "" for line in lines[2:-1]) and lines[-1].startswith("gcc")


def test_a_table_whose_column_names_do_not_fit_prints_each_row_as_lines() -> None:
    columns = ("package", "version", "recipe", "compute capabilities", "installed size", "where")
    drawn = out.table("builds", columns, [("torch", "2.0.1", "k80", "3.7", "1.2 GiB", "/opt/wheels")])
    labels = [f"{name}:".ljust(22) for name in columns]
    values = ("torch", "2.0.1", "k80", "3.7", "1.2 GiB", "/opt/wheels")
    assert out.as_text(drawn, 60) == "builds\n" + "".join(f"{a}{b}\n" for a, b in zip(labels, values))


def test_a_table_on_a_terminal_is_the_same_layout_under_a_rule() -> None:
    stream = io.StringIO()
    stream.isatty = lambda: True  # type: ignore[method-assign]
    console = out.make_console(file=stream)
    out.show_table(out.table("t", ("a", "b"), [("1", "two words")]), console)
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in stream.getvalue().splitlines()]
    assert lines == ["t", "a  b", "─" * 12, "1  two words"]  # the title in italics, the names in bold


def test_a_long_error_is_clipped_between_words_never_inside_one() -> None:
    error = "/src/torch/csrc/Module.cpp:12:10: fatal error: Python.h: No such file or directory " * 3
    clipped = out.clip_words(error.strip(), 80)
    assert clipped.endswith(" ...") and len(clipped) <= 84
    assert all(word in error.split() for word in clipped.removesuffix(" ...").split())
    assert out.clip_words("short", 80) == "short"
    assert out.clip_words("/a/" + "x" * 100 + " tail", 20) == "/a/" + "x" * 100 + " ..."  # a path stays whole
