"""Fuzzing the paste parsers: whatever people paste, the answer is a clean reading or a
SrcbuildError (a one-line message with a hint), never another exception.

Hypothesis runs with a fixed seed and a small budget so the test is fast and repeatable.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from srcbuild.errors import SrcbuildError
from srcbuild.host.identify import read_gpus
from srcbuild.host.parsers import ALL_PARSERS, read_paste
from srcbuild.knowledge import load_knowledge

PASTES = Path(__file__).resolve().parents[2] / "fixtures" / "paste"
SAMPLES = [p.read_text() for p in sorted(PASTES.iterdir())]
# Pieces of real output to recombine: the fuzzer's text looks like what people paste.
PIECES = [line for text in SAMPLES for line in text.splitlines()] + [
    "NVIDIA Corporation",
    "[10de:",
    "Driver Version:",
    "| NVIDIA-SMI",
    "GPU 0: ",
    "(UUID: GPU-",
    "Model:",
    "Bus Location:",
    "name, pci.device_id, compute_cap",
    "0x",
    "...",
    '"',
    "[",
    "]",
    "|",
    ",",
    "\t",
]

pasted = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(PIECES), max_size=12).map("\n".join),
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=20)), max_size=12).map("".join),
    st.builds(
        lambda text, at, junk: text[:at] + junk + text[at:],
        st.sampled_from(SAMPLES),
        st.integers(min_value=0, max_value=2000),
        st.text(max_size=30),
    ),
)


@seed(20261123)
@settings(max_examples=150, deadline=None, derandomize=False, suppress_health_check=[HealthCheck.too_slow])
@given(pasted)
def test_parsers_return_a_reading_or_a_srcbuild_error(text: str) -> None:
    read_paste(text, ALL_PARSERS)  # the parsers themselves never raise
    try:
        reading = read_gpus(load_knowledge(), text, "paste")
    except SrcbuildError as exc:
        assert exc.hint  # every refusal says what to run
        return
    assert reading.gpus  # a reading always names at least one GPU
    for gpu in reading.gpus:
        assert gpu.name
