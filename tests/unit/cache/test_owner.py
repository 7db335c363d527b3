"""Owner tokens: what they name, and whether this machine can tell that their process lives."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from srcbuild.cache.owner import Owner, start_ticks


def test_a_token_names_its_process_and_parses_back() -> None:
    me = Owner.current()
    assert Owner.parse(me.token) == me
    assert me.token != Owner.current().token  # a fresh nonce per write
    assert Owner.parse("not-a-token") is None
    assert Owner.parse(me.token + "/x") is None


def test_this_process_is_alive_and_a_reused_pid_is_not() -> None:
    me = Owner.current()
    assert me.alive_here() is True
    assert dataclasses.replace(me, start=me.start + 1).alive_here() is False  # the pid, started later
    assert dataclasses.replace(me, pid=2**22 + 1).alive_here() is False  # above any pid_max: gone


def test_another_machine_boot_or_namespace_cannot_be_told_here() -> None:
    me = Owner.current()
    assert dataclasses.replace(me, host="elsewhere").alive_here() is None
    assert dataclasses.replace(me, boot="0" * 8 + "-0000-0000-0000-" + "0" * 12).alive_here() is None
    assert dataclasses.replace(me, pidns="1").alive_here() is None


def test_start_ticks_reads_a_command_name_with_spaces_and_parentheses(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    fields = ["S", *["0"] * 18, "98765", "0"]
    (tmp_path / "7" / "stat").write_text("7 (a (b) c) " + " ".join(fields) + "\n")
    assert start_ticks(7, tmp_path) == 98765
    assert start_ticks(8, tmp_path) is None
