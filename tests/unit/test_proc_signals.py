"""stop_on_signals: SIGTERM and SIGHUP interrupt like Ctrl-C, once, and the old handlers come back."""

from __future__ import annotations

import os
import signal

import pytest

from srcbuild import proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_signal_interrupts_once_and_names_itself(sig: signal.Signals) -> None:
    before = {s: signal.getsignal(s) for s in proc.STOP_SIGNALS}
    with proc.stop_on_signals():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), sig)
        assert proc.stop_signal() == sig.name
        assert proc.stopped_by() == ("" if sig is signal.SIGINT else f" by {sig.name}")
        os.kill(os.getpid(), signal.SIGTERM)  # while stopping: ignored, the cleanup goes on
    assert proc.stop_signal() is None
    assert {s: signal.getsignal(s) for s in proc.STOP_SIGNALS} == before
