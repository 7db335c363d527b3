"""The coverage rule: SASS X.y runs on X.z (z >= y); PTX X.Y is JIT-compiled on any cc >= X.Y."""

from __future__ import annotations

import pytest

from srcbuild.capability import ComputeCapability
from srcbuild.verify.fatbin import FatbinEntry
from srcbuild.verify.kernels import Kernels, coverage, covers, sm_text

CC = ComputeCapability.parse


@pytest.mark.parametrize(
    ("sass", "ptx", "cc", "runs"),
    [
        ({35}, set(), "3.5", True),
        ({35}, set(), "3.7", True),  # same major, higher minor
        ({37}, set(), "3.5", False),  # lower minor cannot run a newer SASS
        ({35, 37}, set(), "3.0", False),
        ({35}, set(), "5.0", False),  # SASS never crosses a major
        ({50}, set(), "5.2", True),
        ({61}, set(), "6.0", False),
        (set(), {30}, "3.0", True),  # PTX for its own cc
        (set(), {30}, "6.1", True),  # PTX JIT upwards across majors
        (set(), {50}, "3.7", False),  # never downwards
        ({35, 37, 50}, {50}, "3.0", False),
        ({35, 37, 50}, {50}, "8.6", True),
        (set(), set(), "3.5", False),
    ],
)
def test_covers(sass: set[int], ptx: set[int], cc: str, runs: bool) -> None:
    assert covers(Kernels(frozenset(sass), frozenset(ptx)), CC(cc)) is runs


def test_coverage_prefers_best_sass_then_newest_ptx() -> None:
    kernels = Kernels(frozenset({50, 52}), frozenset({50, 60}))
    assert coverage(kernels, CC("5.3")).via == "SASS sm_52"
    assert coverage(kernels, CC("7.5")).via == "PTX compute_60 (JIT)"
    assert coverage(Kernels(), CC("3.0")).via == "no kernel image"


def test_kepler_ptx_caveat_only_for_new_ptx() -> None:
    kernels = Kernels(frozenset(), frozenset({30}))
    new = coverage(kernels, CC("3.5"), (7, 8))
    assert new.runs and new.caveat.startswith("compute capability 3.5 runs only through JIT of PTX ISA 7.8")
    assert coverage(kernels, CC("3.5"), (6, 2)).caveat == ""
    assert coverage(Kernels(frozenset(), frozenset({50})), CC("6.1"), (7, 8)).caveat == ""


def test_from_entries_and_merge() -> None:
    a = Kernels.from_entries([FatbinEntry("sass", 35), FatbinEntry("ptx", 50), FatbinEntry("sass", 35)])
    assert a == Kernels(frozenset({35}), frozenset({50}))
    assert (a | Kernels(frozenset({37}))).sass == frozenset({35, 37})
    assert a.to_json() == {"sass": ["3.5"], "ptx": ["5.0"]}


def test_sm_text() -> None:
    assert sm_text([37, 35, 50]) == "3.5, 3.7 and 5.0"
    assert sm_text([]) == "none"
