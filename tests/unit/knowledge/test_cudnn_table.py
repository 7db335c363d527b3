"""The cuDNN table up to the releases on the package index: rows 9.14 on, and what their wheels said."""

from __future__ import annotations

import re

import pytest

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge import KnowledgeBase, load_knowledge, versions


def cc(text: str) -> ComputeCapability:
    return ComputeCapability.parse(text)


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return load_knowledge()


MAXWELL_PASCAL_VOLTA = ("5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2")


def test_every_minor_release_from_914_to_928_has_a_row(kb: KnowledgeBase) -> None:
    for minor in range(14, 29):
        row = kb.cudnn(f"9.{minor}")
        assert row is not None, f"9.{minor}"
        assert row.has_build_for("12.6") and row.has_build_for("13.0"), row
        assert not row.has_build_for("11.8"), row
        assert not row.unconfirmed, row


def test_the_newest_row_keeps_maxwell_pascal_and_volta_out(kb: KnowledgeBase) -> None:
    newest = kb.cudnn_releases[-1]
    assert versions.parse(newest.version) >= (9, 28)
    assert {major for major, _ in newest.lowest_cc} == {12, 13}
    for major, lowest in newest.lowest_cc:
        for generation in MAXWELL_PASCAL_VOLTA:
            assert cc(generation) < lowest, (major, generation, lowest)
        assert lowest == cc("7.5"), (major, lowest)


def test_no_row_after_910_serves_maxwell_pascal_or_volta(kb: KnowledgeBase) -> None:
    later = [r for r in kb.cudnn_releases if versions.parse(r.version) >= (9, 11)]
    assert len(later) >= 18
    for row in later:
        assert all(lowest >= cc("7.5") for _, lowest in row.lowest_cc), row


def test_the_scanned_rows_cite_the_wheel_they_were_read_from(kb: KnowledgeBase) -> None:
    binary = re.compile(r"binary: nvidia_cudnn_cu1[23]-(9\.\d+)\.\d+\.\d+-py3-none-\S+\.whl sha256:[0-9a-f]{64} \(")
    for minor in (14, 19, 24, 28):
        row = kb.cudnn(f"9.{minor}")
        assert row is not None
        cited = binary.findall(row.source)
        assert f"9.{minor}" in cited, (minor, row.source)
