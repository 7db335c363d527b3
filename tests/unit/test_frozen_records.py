"""``@record`` behaves as ``@dataclass(frozen=True)``: each class is declared both ways and compared."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from srcbuild.records import record

Decorator = Callable[[type], type]
BOTH: list[Decorator] = [dataclasses.dataclass(frozen=True), record]


def declare(deco: Decorator) -> dict[str, Any]:
    """The same set of classes under one decorator."""

    @deco
    class Point:
        x: int
        y: int = 0

    @deco
    class Empty:
        pass

    @deco
    class One:
        only: str

    @deco
    class Tagged:
        name: str
        note: str = dataclasses.field(default="", compare=False)
        secret: str = dataclasses.field(default="", repr=False)
        loose: float = dataclasses.field(default=0.0, hash=False)
        items: tuple[int, ...] = dataclasses.field(default_factory=tuple)

    @deco
    class Point3(Point):
        z: int = 0

    @deco
    class OwnEq:
        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq) and abs(self.a - other.a) < 2

    @deco
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 7

    @deco
    class OwnRepr:
        a: int

        def __repr__(self) -> str:
            return "mine"

    @deco
    class Nested:
        inner: list[Any]

    return {c.__name__: c for c in (Point, Empty, One, Tagged, Point3, OwnEq, OwnHash, OwnRepr, Nested)}


def observe(deco: Decorator) -> list[object]:
    """Everything a caller can see of those classes; both decorators must give the same list."""
    c = declare(deco)
    p, q = c["Point"](1, 2), c["Point"](1, 2)
    seen: list[object] = [repr(p), p == q, p != q, hash(p) == hash(q), hash(p), p == (1, 2), p.__eq__((1, 2))]
    seen += [c["Point"](1) == c["Point"](1, 0), c["Point"](1, 2) == c["Point"](2, 1)]
    seen += [repr(c["Empty"]()), c["Empty"]() == c["Empty"](), hash(c["Empty"]()), repr(c["One"]("a"))]
    seen += [hash(c["One"]("a")), c["One"]("a") == c["One"]("a"), c["One"](float("nan")) == c["One"](float("nan"))]
    nan = float("nan")
    seen += [c["One"](nan) == c["One"](nan)]  # the same object: equal, as tuples compare
    t1 = c["Tagged"]("n", note="a", secret="s", loose=1.0)
    t2 = c["Tagged"]("n", note="b", secret="s", loose=1.0)
    t3 = c["Tagged"]("n", note="a", secret="s", loose=2.0)
    seen += [repr(t1), t1 == t2, hash(t1) == hash(t2), t1 == t3, hash(t1) == hash(t3), hash(t1)]
    p3 = c["Point3"](1, 2, 3)
    seen += [repr(p3), p3 == c["Point3"](1, 2, 3), p3 == c["Point"](1, 2), c["Point"](1, 2) == p3, hash(p3)]
    seen += [c["OwnEq"](1) == c["OwnEq"](2), c["OwnEq"](1) == c["OwnEq"](5), hash(c["OwnEq"](1))]
    seen += [hash(c["OwnHash"](1)), repr(c["OwnRepr"](1))]
    loop = c["Nested"]([])
    loop.inner.append(loop)
    seen += [repr(loop)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x  # type: ignore[misc]
    seen += [dataclasses.replace(p, y=9), dataclasses.asdict(t1), [f.name for f in dataclasses.fields(p3)]]
    seen += [copy.deepcopy(p) == p, {p: 1}[q], len({p, q, c["Point"](2)})]
    seen += [p.__match_args__, c["Point"].__doc__]
    return [repr(s) if not isinstance(s, (bool, int)) else s for s in seen]


def test_record_is_seen_as_a_frozen_dataclass() -> None:
    assert observe(record) == observe(dataclasses.dataclass(frozen=True))


@pytest.mark.parametrize("deco", BOTH, ids=["dataclass", "record"])
def test_unhashable_field_fails_the_same(deco: Decorator) -> None:
    cls = declare(deco)["Nested"]
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        hash(cls([]))


def declare_inits(deco: Decorator) -> list[type]:
    """Classes of every ``__init__`` shape: defaults, factories, keyword-only fields, fields out of
    ``__init__``, an ``InitVar`` with ``__post_init__``, a field named ``self``, two classes of one
    shape (one compile for both with ``record``)."""

    @deco
    class Plain:
        a: int
        b: str = "b"

    @deco
    class SameShape:
        x: tuple[int, ...]
        y: str = "y"

    @deco
    class Factories:
        items: list[int] = dataclasses.field(default_factory=list)
        made: dict[str, int] = dataclasses.field(default_factory=dict, init=False)
        fixed: int = dataclasses.field(default=3, init=False)

    @deco
    class KeywordOnly:
        a: int
        _: dataclasses.KW_ONLY
        b: int = 2
        c: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    @deco
    class PostInit:
        a: int
        scale: dataclasses.InitVar[int] = 1
        doubled: int = dataclasses.field(default=0, init=False)

        def __post_init__(self, scale: int) -> None:
            object.__setattr__(self, "doubled", self.a * 2 * scale)

    @deco
    class SelfField:
        self: str
        other: int = 0

    @deco
    class Child(Plain):
        c: float = 0.5

    return [Plain, SameShape, Factories, KeywordOnly, PostInit, SelfField, Child]


def init_seen(cls: type) -> list[object]:
    """What a caller can see of ``cls.__init__``: its signature, names, defaults, annotations, the
    module it belongs to, its messages for wrong arguments."""
    import inspect
    import typing

    init: Any = cls.__init__
    code = init.__code__
    seen: list[object] = [str(inspect.signature(cls)), str(inspect.signature(init)), init.__qualname__]
    seen += [init.__name__, init.__module__, init.__globals__ is globals(), init.__defaults__, init.__kwdefaults__]
    seen += [init.__annotations__, code.co_varnames, code.co_argcount, code.co_kwonlyargcount, code.co_filename]
    seen += [sorted(typing.get_type_hints(init, localns={cls.__name__: cls}))]
    for args, kwargs in (((), {}), ((1, 2, 3, 4), {}), ((1,), {"zzz": 1})):
        try:
            seen.append(repr(cls(*args, **kwargs)).split(".")[-1])
        except TypeError as wrong:
            seen.append(str(wrong))
    return seen


def test_record_inits_are_dataclass_inits() -> None:
    ours, theirs = declare_inits(record), declare_inits(dataclasses.dataclass(frozen=True))
    for mine, its in zip(ours, theirs):
        assert init_seen(mine) == init_seen(its), mine.__name__
    plain, _same, factories, keyword_only, post_init, self_field, child = ours
    assert repr(plain(1)) == "declare_inits.<locals>.Plain(a=1, b='b')"
    made = factories()
    assert (made.items, made.made, made.fixed) == ([], {}, 3) and factories().items is not made.items
    assert repr(keyword_only(1, b=5)) == "declare_inits.<locals>.KeywordOnly(a=1, b=5, c=())"
    assert post_init(2, scale=3).doubled == 12 and post_init(2).doubled == 4
    assert self_field("me", other=1).self == "me"
    assert repr(child(1, "x", 1.5)) == "declare_inits.<locals>.Child(a=1, b='x', c=1.5)"


def test_an_init_of_a_shared_shape_belongs_to_its_own_module() -> None:
    import srcbuild.packages as other

    fields = {"a": "int", "b": "str"}
    first: Any = record(type("First", (), {"__annotations__": fields, "__module__": __name__}))
    second: Any = record(type("Second", (), {"__annotations__": dict(fields), "__module__": other.__name__}))
    assert first.__init__.__code__ is not second.__init__.__code__
    assert first.__init__.__globals__ is globals() and second.__init__.__globals__ is vars(other)
    assert second.__init__.__module__ == "srcbuild.packages" and second(1, "b").b == "b"


def test_the_compiled_inits_are_kept_for_the_next_run(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import srcbuild.records as records

    kept_file = tmp_path / "records" / "init.marshal"
    monkeypatch.setattr(records, "_kept_file", lambda: kept_file)
    monkeypatch.setattr(records, "_KEPT", None)
    monkeypatch.setattr(records, "_FACTORIES", {})
    monkeypatch.setattr(records, "_kept_changed", False)
    registered: list[Callable[[], None]] = []
    monkeypatch.setattr(records.atexit, "register", registered.append)

    def one_run() -> type:
        fields = {"first_of_its_shape": "int", "b": "str", "c": "tuple[int, ...]"}
        made: Any = record(type("Kept", (), {"__annotations__": fields, "c": (), "__module__": __name__}))
        return made

    cls: Any = one_run()
    assert registered == [records._write_kept] and records._kept_changed
    records._write_kept()  # the run ends
    assert kept_file.is_file() and not list(kept_file.parent.glob(".*"))  # renamed into place
    source = next(iter(records._FACTORIES))
    assert records._read_kept()[source] is not None

    # the next run: the same shape is read, not compiled, and makes the same __init__
    monkeypatch.setattr(records, "_KEPT", None)
    monkeypatch.setattr(records, "_FACTORIES", {})
    monkeypatch.setattr(records, "_kept_changed", False)
    monkeypatch.setattr(records, "compile", lambda *a, **k: pytest.fail("compiled again"), raising=False)
    again: Any = one_run()
    assert not records._kept_changed
    assert init_seen(again) == init_seen(cls)
    assert repr(again(1, "x")) == "Kept(first_of_its_shape=1, b='x', c=())"


def test_a_kept_file_that_does_not_read_is_compiled_again(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import marshal

    import srcbuild.records as records

    kept_file = tmp_path / "init.marshal"
    monkeypatch.setattr(records, "_kept_file", lambda: kept_file)
    for content in (b"", b"\x00garbage", marshal.dumps(["a list"]), marshal.dumps({"source": "not code", 1: 2})):
        kept_file.write_bytes(content)
        assert records._read_kept() == {}
    kept_file.unlink()
    assert records._read_kept() == {}  # none yet


def test_a_kept_file_another_user_could_write_is_not_read(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept file is code: group- or world-writable (the file or its directory) is never read."""
    import marshal
    import os

    import srcbuild.records as records

    folder = tmp_path / "records"
    folder.mkdir(mode=0o700)
    kept_file = folder / "init.marshal"
    monkeypatch.setattr(records, "_kept_file", lambda: kept_file)
    source = "def __create_fn__():\n def f(): return 1\n return f"
    kept_file.write_bytes(marshal.dumps({source: compile(source, "<string>", "exec")}))
    os.chmod(kept_file, 0o600)
    assert source in records._read_kept()
    os.chmod(kept_file, 0o666)
    assert records._read_kept() == {}
    os.chmod(kept_file, 0o600)
    os.chmod(folder, 0o777)
    assert records._read_kept() == {}
