"""proc.Waiting: a program started early waits for its one line; ``go`` runs it as ``run`` would
(output, exit code, the echoed command), and ``cancel`` stops it having done nothing."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest

from srcbuild import proc

pytestmark = pytest.mark.integration

# writes argv[1] only once it has read a line, and says what the line was
ON_THE_LINE = (
    "import sys\n"
    "line = sys.stdin.readline().strip()\n"
    "if not line: sys.exit(0)\n"
    "open(sys.argv[1], 'w').write(line)\n"
    "print('got', line)\n"
    "sys.exit(int(line) if line.isdigit() else 0)\n"
)


def test_go_runs_the_waiting_program_with_its_line(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    waiting = proc.Waiting([sys.executable, "-c", ON_THE_LINE, str(marker)])
    time.sleep(0.2)
    assert not marker.exists()  # started, but nothing done before the line
    echo = io.StringIO()
    result = waiting.go("hello", ["prog", "hello world"], echo)
    assert result.ok and result.tail == ("got hello",)
    assert result.argv == ("prog", "hello world")
    assert echo.getvalue() == "+ prog 'hello world'\n"  # the command the user can paste
    assert marker.read_text() == "hello"
    waiting.cancel()  # after go: nothing to stop
    assert marker.read_text() == "hello"


def test_go_hands_back_the_exit_code() -> None:
    waiting = proc.Waiting([sys.executable, "-c", ON_THE_LINE, "/dev/null"])
    assert waiting.go("3", ["prog"]).returncode == 3


def test_cancel_stops_it_before_it_does_anything(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    waiting = proc.Waiting([sys.executable, "-c", "import time; time.sleep(30)\n" + ON_THE_LINE, str(marker)])
    start = time.monotonic()
    waiting.cancel()
    assert time.monotonic() - start < 5  # terminated, not waited for
    assert not marker.exists()


def test_a_program_that_ended_early_reports_its_output_not_a_broken_pipe() -> None:
    waiting = proc.Waiting([sys.executable, "-c", "print('cannot start'); raise SystemExit(4)"])
    time.sleep(0.5)  # it is gone before the line is sent
    result = waiting.go("x" * 100_000, ["prog"])
    assert result.returncode == 4 and result.tail == ("cannot start",)


def test_a_missing_program_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        proc.Waiting([str(tmp_path / "nope")])
