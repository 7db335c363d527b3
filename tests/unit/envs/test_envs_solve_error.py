"""Rattler's solver reports, turned into one sentence: which package, which constraint."""

from __future__ import annotations

from srcbuild.envs.solve import explain_solve_error

CHANNELS = ("conda-forge", "pytorch")


def test_no_candidates_for_a_requested_package() -> None:
    text = "Cannot solve the request because of: No candidates were found for python 3.9.*.\n"
    why = explain_solve_error(text, CHANNELS)
    assert why.package == "python"
    assert why.message == "no package in conda-forge, pytorch matches `python 3.9.*`"
    assert why.hint == "check the version of python the recipe asks for, or add a channel (or mirror) that has it"


def test_a_dependency_nobody_provides() -> None:
    text = (
        "Cannot solve the request because of: cmake >=4 cannot be installed because there are no viable options:\n"
        "└─ cmake 4.0.2 would require\n"
        "   └─ libuv >=1.48,<2, for which no candidates were found.\n"
    )
    why = explain_solve_error(text, CHANNELS)
    assert why.package == "libuv"
    assert why.message == (
        "cannot install `cmake >=4`: cmake 4.0.2 needs `libuv >=1.48,<2`, "
        "which no package in conda-forge, pytorch provides"
    )


def test_unpinned_request_drops_the_star() -> None:
    text = (
        "Cannot solve the request because of: hello * cannot be installed because there are no viable options:\n"
        "└─ hello 0.1 would require\n"
        "   └─ libgreet >=1.0,<2, for which no candidates were found.\n"
    )
    why = explain_solve_error(text, ("file:///c",))
    assert why.message == (
        "cannot install `hello`: hello 0.1 needs `libgreet >=1.0,<2`, which no package in file:///c provides"
    )


def test_conflicts_are_named() -> None:
    text = (
        "Cannot solve the request because of: The following packages are incompatible\n"
        "├─ numpy 2.* cannot be installed because there are no viable options:\n"
        "│  └─ numpy 2.0.2 would require\n"
        "│     └─ python >=3.9, which conflicts with the versions reported above.\n"
    )
    why = explain_solve_error(text, CHANNELS)
    assert why.package == "python"
    assert "`python >=3.9`, which conflicts with `the versions reported above`" in why.message


def test_a_dependency_excluded_by_another_request_is_a_conflict() -> None:
    text = (
        "Cannot solve the request because of: hello * cannot be installed because there are no viable options:\n"
        "└─ hello 0.1 would require\n"
        "   └─ libgreet >=1.0,<2, for which no candidates were found.\n"
    )
    why = explain_solve_error(text, CHANNELS, ("python 3.8.*", "hello", "libgreet >=2"))
    assert why.package == "libgreet"
    assert why.message == (
        "cannot install `hello`: hello 0.1 needs `libgreet >=1.0,<2`, which conflicts with the requested `libgreet >=2`"
    )


def test_every_candidate_tried_is_named() -> None:
    text = (
        "Cannot solve the request because of: cmake >=3.27 cannot be installed because there are no viable options:\n"
        "├─ cmake 4.0.2 would require\n"
        "│  └─ libuv >=1.48,<2, for which no candidates were found.\n"
        "└─ cmake 3.27.9 would require\n"
        "   └─ libuv >=1.44,<2, for which no candidates were found.\n"
    )
    why = explain_solve_error(text, ("conda-forge",), ("python 3.8.*", "cmake >=3.27", "libuv <1.44"))
    assert why.package == "libuv"
    assert why.message == (
        "cannot install `cmake >=3.27`: cmake 4.0.2 needs `libuv >=1.48,<2`, which conflicts with the requested "
        "`libuv <1.44`; cmake 3.27.9 needs `libuv >=1.44,<2`, which conflicts with the requested `libuv <1.44`"
    )
