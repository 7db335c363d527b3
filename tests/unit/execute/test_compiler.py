"""update-alternatives argv and query parsing (the commands themselves run in the integration tests)."""

from __future__ import annotations

from pathlib import Path

from srcbuild.execute.compiler import Selection, SystemSelection, parse_query
from srcbuild.resolve.compiler import AlternativesTree, private_tree

QUERY = """Name: gcc
Link: /usr/bin/gcc
Slaves:
 g++ /usr/bin/g++
Status: manual
Best: /usr/bin/gcc-12
Value: /usr/bin/gcc-11

Alternative: /usr/bin/gcc-11
Priority: 40
Slaves:
 g++ /usr/bin/g++-11

Alternative: /usr/bin/gcc-12
Priority: 50
Slaves:
 g++ /usr/bin/g++-12
"""


def test_parse_query() -> None:
    sel = parse_query(QUERY)
    assert (sel.status, sel.value) == ("manual", "/usr/bin/gcc-11")
    assert sel.alternatives == ("/usr/bin/gcc-11", "/usr/bin/gcc-12")
    assert parse_query(None) == Selection(None, None)


def test_private_tree_argv() -> None:
    tree = private_tree(Path("/w/compilers/gcc-7"))
    assert tree.set_argv(Path("/usr/bin/gcc-7")) == (
        "update-alternatives",
        "--altdir",
        "/w/compilers/gcc-7/alt",
        "--admindir",
        "/w/compilers/gcc-7/admin",
        "--log",
        "/w/compilers/gcc-7/update-alternatives.log",
        "--set",
        "gcc",
        "/usr/bin/gcc-7",
    )


def test_restore_commands() -> None:
    tree = AlternativesTree(Path("/usr/bin"), log=Path("/w/ua.log"))
    sel = SystemSelection(tree)
    sel.previous = parse_query(QUERY)
    assert sel.restore_commands(Path("/usr/bin/gcc-11")) == (
        ("update-alternatives", "--log", "/w/ua.log", "--set", "gcc", "/usr/bin/gcc-11"),
    )
    sel.previous = Selection("auto", "/usr/bin/gcc-12", alternatives=("/usr/bin/gcc-12",))
    assert sel.restore_commands(Path("/usr/bin/gcc-7")) == (
        ("update-alternatives", "--log", "/w/ua.log", "--remove", "gcc", "/usr/bin/gcc-7"),
        ("update-alternatives", "--log", "/w/ua.log", "--auto", "gcc"),
    )
    sel.previous = Selection(None, None, "/usr/bin/x86_64-linux-gnu-gcc-12")
    assert sel.restore_commands(Path("/usr/bin/gcc-7")) == (
        ("update-alternatives", "--log", "/w/ua.log", "--remove", "gcc", "/usr/bin/gcc-7"),
    )
