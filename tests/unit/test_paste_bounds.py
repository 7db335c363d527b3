"""``recommend --paste`` is bounded: 1 MiB of input, 256 listed GPUs, and identical lines identified
once, so the work grows with the distinct GPUs of a paste, not its length."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srcbuild.cli import main
from srcbuild.cli.doctor import MAX_PASTE_BYTES
from srcbuild.errors import UsageError
from srcbuild.host.identify import MAX_LISTED_GPUS, read_gpus
from srcbuild.knowledge import load_knowledge

SMI_L = "GPU {i}: Tesla K80 (UUID: GPU-12345678-1234-1234-1234-123456789abc)"


def test_a_paste_over_the_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    paste = tmp_path / "paste.txt"
    paste.write_text((SMI_L.format(i=0) + "\n") * (MAX_PASTE_BYTES // 60 + 1))
    assert main(["recommend", "--paste", str(paste)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        f"error: --paste {paste}: more than 1024 KiB; what lspci or nvidia-smi print on one machine is a few KiB"
    )
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(paste.read_bytes())))
    assert main(["recommend", "--paste", "-"]) == 2
    assert "error: --paste standard input: more than 1024 KiB" in capsys.readouterr().err


def test_more_gpus_than_a_machine_has_is_refused() -> None:
    kb = load_knowledge()
    text = "\n".join(SMI_L.format(i=i) for i in range(MAX_LISTED_GPUS + 1))
    with pytest.raises(UsageError) as info:
        read_gpus(kb, text, "paste")
    assert info.value.message.startswith(f"paste: lists {MAX_LISTED_GPUS + 1} GPUs; ")


def test_identical_lines_cost_one_identification() -> None:
    kb = load_knowledge()
    read_gpus(kb, SMI_L.format(i=0), "warm-up")
    text = "\n".join(SMI_L.format(i=i) for i in range(MAX_LISTED_GPUS))
    started = time.process_time()
    reading = read_gpus(kb, text, "paste")
    spent = time.process_time() - started
    assert len(reading.gpus) == MAX_LISTED_GPUS and {g.name for g in reading.gpus} == {"Tesla K80"}
    assert spent < 1.0  # 256 lines; each was 6.5 ms before identical lines were identified once


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_paste_is_read_or_a_usage_error(text: str) -> None:
    try:
        read_gpus(load_knowledge(), text, "paste")
    except UsageError as exc:
        assert exc.message.startswith("paste: ")
